// Package edge_test attacks the real tetherd binary at its network edge:
// connection floods, slow and idle clients, TLS. The listener and the
// http.Server live in cmd/tetherd, so only the binary can be tested here.
package edge_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

const token = "edge-test-token"

// deadline bounds every wait: a safety net against hangs, never a
// performance assertion.
const deadline = 30 * time.Second

func TestMain(m *testing.M) { testbin.Main(m) }

// daemon is one running tetherd.
type daemon struct {
	t      *testing.T
	addr   string // host:port clients dial
	base   string // URL
	client *http.Client
	logs   *testbin.LogBuffer
}

type daemonOptions struct {
	// nofile, when set, runs the daemon with this RLIMIT_NOFILE (soft and
	// hard, so Go cannot raise it).
	nofile int
	// listen is the --addr host (default 127.0.0.1); clients still dial
	// 127.0.0.1.
	listen string
	// client replaces the default HTTP client (TLS).
	client *http.Client
	scheme string
	args   []string
}

func startDaemon(t *testing.T, o daemonOptions) *daemon {
	t.Helper()
	bin := testbin.Tetherd(t)
	addr := testbin.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	listen := addr
	if o.listen != "" {
		listen = net.JoinHostPort(o.listen, port)
	}
	args := append([]string{"serve", "--data-dir", t.TempDir(), "--addr", listen, "--executor", "standalone"}, o.args...)
	name := bin
	if o.nofile > 0 {
		args = append([]string{"-c", "ulimit -n " + strconv.Itoa(o.nofile) + ` && exec "$0" "$@"`, bin}, args...)
		name = "sh"
	}
	logs := &testbin.LogBuffer{}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = append(os.Environ(), "TETHER_TOKEN="+token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A clean stop: the daemon stops its agents, so none writes into a
	// temp dir while the test removes it.
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(deadline):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	if o.scheme == "" {
		o.scheme = "http"
	}
	d := &daemon{t: t, addr: addr, base: o.scheme + "://" + addr, client: o.client, logs: logs}
	if d.client == nil {
		d.client = &http.Client{Transport: &http.Transport{}}
	}
	d.client.Timeout = deadline
	t.Cleanup(d.client.CloseIdleConnections)
	stop := time.Now().Add(deadline)
	for {
		resp, err := d.client.Get(d.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		if time.Now().After(stop) {
			t.Fatalf("tetherd did not become healthy: %v\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends an authenticated request and returns the status and body.
func (d *daemon) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, d.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// mustWork checks that the daemon still serves /health and starts a
// session.
func (d *daemon) mustWork() {
	d.t.Helper()
	if st, b, err := d.do("GET", "/health", nil); err != nil || st != http.StatusOK {
		d.t.Fatalf("GET /health: got %d %s (%v), want 200\n%s", st, b, err, d.logs.String())
	}
	st, b, err := d.do("POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": d.t.TempDir()})
	if err != nil || st != http.StatusCreated {
		d.t.Fatalf("POST /session: got %d %s (%v), want 201\n%s", st, b, err, d.logs.String())
	}
}

// dial opens a raw connection; the test closes it at its end.
func (d *daemon) dial() net.Conn {
	d.t.Helper()
	c, err := net.DialTimeout("tcp", d.addr, deadline)
	if err != nil {
		d.t.Fatalf("dial: %v", err)
	}
	d.t.Cleanup(func() { _ = c.Close() })
	return c
}

// request is a raw HTTP/1.1 request head.
func request(method, path string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// readResponse reads one response from c (its body too) before stop.
func readResponse(c net.Conn, br *bufio.Reader, stop time.Time) (*http.Response, []byte, error) {
	_ = c.SetReadDeadline(stop)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// waitClosed reads from c until the daemon closes it; it fails the test
// if c is still open when the safety deadline passes.
func waitClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(deadline))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the daemon did not close the connection: %v", err)
	}
}

// metrics scrapes /metrics and returns each unlabelled sample's value.
func (d *daemon) metrics() map[string]float64 {
	d.t.Helper()
	st, b, err := d.do("GET", "/metrics", nil)
	if err != nil || st != http.StatusOK {
		d.t.Fatalf("GET /metrics: got %d %s (%v), want 200", st, b, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || strings.Contains(name, "{") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			d.t.Fatalf("metrics line %q: %v", line, err)
		}
		out[name] = v
	}
	return out
}
