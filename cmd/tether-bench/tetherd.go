package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The tetherd processes the benches start: built or given, launched on a
// free loopback port, waited for (/health), stopped, killed, and asked.

// buildTetherd returns $TETHERD_BIN or a fresh build of ./cmd/tetherd.
func buildTetherd(ctx context.Context, root string) (string, error) {
	if p := os.Getenv("TETHERD_BIN"); p != "" {
		return filepath.Abs(p)
	}
	bin := filepath.Join(root, "bin", "tetherd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tether/tether/cmd/tetherd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tetherd: %v\n%s", err, out)
	}
	return bin, nil
}

// newRun makes a part's temp dir (tether-bench-<part>-*) and its run;
// done kills every process the run started and removes the dir, or with
// keep says where it is.
func newRun(part string, cfg restartConfig, keep bool) (rb *restartRun, done func(), err error) {
	root, err := os.MkdirTemp("", "tether-bench-"+part+"-")
	if err != nil {
		return nil, nil, err
	}
	rb = &restartRun{cfg: cfg, root: root, client: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, DisableCompression: true}, Timeout: 30 * time.Second}}
	return rb, func() {
		rb.cleanup()
		if keep {
			fmt.Fprintf(os.Stderr, "tether-bench: %s data dirs and daemon logs kept in %s\n", part, root)
		} else {
			_ = os.RemoveAll(root)
		}
	}, nil
}

// tetherdProc is one `tetherd serve` child.
type tetherdProc struct {
	cmd     *exec.Cmd
	base    string
	dir     string
	logPath string
	started time.Time
	done    chan struct{}
}

func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// launch starts `tetherd serve` on dir; its output goes to a log file the
// child writes itself (no copying goroutine in this process).
func (rb *restartRun) launch(dir, name string, extra ...string) (*tetherdProc, error) {
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	return rb.launchAt(dir, addr, name, extra...)
}

// launchAt is launch on a given address: a daemon restarted where its
// clients reconnect.
func (rb *restartRun) launchAt(dir, addr, name string, extra ...string) (*tetherdProc, error) {
	rb.n++
	logPath := filepath.Join(rb.root, "logs", fmt.Sprintf("%02d-%s.log", rb.n, name))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// No agent cap: a preparation wave keeps 100 agents alive at once,
	// more than --max-agents' default.
	args := append([]string{"serve", "--data-dir", dir, "--addr", addr, "--token", token, "--max-agents", "0", "--executor", "standalone"}, extra...)
	cmd := exec.Command(rb.bin, args...)
	if rb.env != nil {
		cmd.Env = append(os.Environ(), rb.env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = rb.root
	p := &tetherdProc{cmd: cmd, base: "http://" + addr, dir: dir, logPath: logPath, done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	rb.mu.Lock()
	rb.procs = append(rb.procs, p)
	rb.mu.Unlock()
	return p, nil
}

// waitHealthy polls GET /health every 5 ms and returns the time from
// process start to the first 200.
func (rb *restartRun) waitHealthy(ctx context.Context, p *tetherdProc) (time.Duration, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	end := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/health", nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		select {
		case <-p.done:
			return 0, fmt.Errorf("tetherd exited during start-up; log %s:\n%s", p.logPath, tail(p.logPath))
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("tetherd not healthy within 60s (last error %v); log %s", err, p.logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// term stops the daemon with SIGTERM (a clean stop) and waits.
func (p *tetherdProc) term() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("tetherd did not stop within 30s of SIGTERM (killed); log %s", p.logPath)
	}
}

// kill9 kills the daemon with SIGKILL and waits until it is reaped.
func (p *tetherdProc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// reconciled reads the daemon's reconciliation log line.
func (p *tetherdProc) reconciled() reconcileLine {
	b, _ := os.ReadFile(p.logPath)
	m := reconcileRE.FindSubmatch(b)
	if m == nil {
		return reconcileLine{}
	}
	s, _ := strconv.Atoi(string(m[1]))
	t, _ := strconv.Atoi(string(m[2]))
	return reconcileLine{Found: true, Sessions: s, Turns: t, Took: string(m[3])}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// measureStart starts a daemon on dir and times it to /health; the daemon
// is left running.
func (rb *restartRun) measureStart(ctx context.Context, dir, name string, extra ...string) (*tetherdProc, restartTiming, error) {
	p, err := rb.launch(dir, name, extra...)
	if err != nil {
		return nil, restartTiming{}, err
	}
	d, err := rb.waitHealthy(ctx, p)
	if err != nil {
		p.kill9()
		return nil, restartTiming{}, err
	}
	t := restartTiming{Health: d, Reconciled: p.reconciled()}
	rb.cfg.Logf("restart: %-6s %s → /health 200 in %s (%+v)", name, filepath.Base(dir), d.Round(time.Microsecond), t.Reconciled)
	return p, t, nil
}

// api sends a request with the token; out (if non-nil) receives the JSON.
func (rb *restartRun) api(ctx context.Context, p *tetherdProc, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := rb.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %v", method, path, err)
		}
	} else if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp.StatusCode, nil
}
