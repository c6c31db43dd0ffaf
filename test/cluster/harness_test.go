// Package cluster_test runs several real tetherd nodes on one real
// PostgreSQL database, behind a real nginx, and breaks them: kill -9 of the
// node that owns sessions mid-turn, a node cut off from the database in a
// network namespace (split brain), and concurrent writers on every node.
package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tether/tether/internal/host"
	"github.com/tether/tether/internal/testbin"
)

const token = "cluster-test-token"

// deadline bounds every wait: a safety net against hangs, never a
// performance assertion.
const deadline = 60 * time.Second

func TestMain(m *testing.M) { testbin.Main(m) }

// cluster is one database and the nodes serving it, each with a data dir
// of its own; they share the token and the local executor host's
// directory (the detached runtime's host serves every node of a machine).
type cluster struct {
	t       *testing.T
	bin     string
	db      string
	dir     string
	hostDir string
	ttl     time.Duration

	mu    sync.Mutex
	nodes map[string]*node
}

// node is one tetherd of the cluster.
type node struct {
	id, addr, dir string
	// netns, when set, is the network namespace the node runs in, and ip
	// its address there.
	netns, ip string
	cmd       *exec.Cmd
	logs      *testbin.LogBuffer
	exited    chan struct{}
}

// URL is the node's base URL.
func (n *node) URL() string { return "http://" + n.addr }

func newCluster(t *testing.T, ttl time.Duration) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: testbin.Tetherd(t), db: testbin.FreshPostgres(t), dir: t.TempDir(), ttl: ttl, nodes: map[string]*node{}}
	c.hostDir = filepath.Join(c.dir, "host")
	if err := os.WriteFile(filepath.Join(c.dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stop)
	return c
}

// start runs node id (again, after a kill, on the same data dir) and waits
// until it is ready.
func (c *cluster) start(id string, extra ...string) *node {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	if n == nil {
		n = &node{id: id, addr: testbin.FreeAddr(c.t), dir: filepath.Join(c.dir, id)}
		c.nodes[id] = n
	}
	c.mu.Unlock()
	c.writeAgents(n.dir)
	args := []string{"serve", "--data-dir", n.dir, "--addr", n.addr, "--token-file", filepath.Join(c.dir, "token"),
		"--database", c.db, "--node-id", id, "--node-url", n.URL(), "--lease-ttl", c.ttl.String(),
		"--host-dir", c.hostDir, "--log-level", "info", "--allowed-hosts", balancerHost}
	args = append(args, extra...)
	name, argv := c.bin, args
	if n.netns != "" {
		// Its address is not loopback: plain HTTP on a test network.
		name, argv = "ip", append([]string{"netns", "exec", n.netns, c.bin}, append(args, "--insecure-http")...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Env = append(os.Environ(), "TETHER_TOKEN=", "SHELL=/bin/sh") // terminals: see test/crash's harness
	n.logs = &testbin.LogBuffer{}
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start node %s: %v", id, err)
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(n.exited)
	c.waitFor("node "+id+" to be ready", func() bool {
		r, err := http.Get(n.URL() + "/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	return n
}

// writeAgents gives a node the demo agent profile.
func (c *cluster) writeAgents(dir string) {
	c.t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"demo-agent", "--state-dir", filepath.Join(c.dir, "demo-state")})
	bin, _ := json.Marshal(c.bin)
	state, _ := json.Marshal(filepath.Join(c.dir, "demo-state"))
	// Sandboxed as a user's profile is: its state dir its own.
	yaml := fmt.Sprintf("agents:\n  - id: demo\n    displayName: Demo\n    command: %s\n    args: %s\n    sandbox: {writable: [%s]}\n", bin, args, state)
	if err := os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(yaml), 0o600); err != nil {
		c.t.Fatal(err)
	}
}

// kill9 kills node id (and only it: its detached host lives on).
func (c *cluster) kill9(id string) {
	c.t.Helper()
	n := c.nodes[id]
	if n == nil || n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
}

// stop ends every node, then the executor hosts they share, printing the
// nodes' logs when the test failed.
func (c *cluster) stop() {
	for id, n := range c.nodes {
		if n.cmd != nil && n.cmd.ProcessState == nil {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-n.exited:
			case <-time.After(10 * time.Second):
				_ = n.cmd.Process.Kill()
				<-n.exited
			}
		}
		if c.t.Failed() {
			c.t.Logf("--- node %s ---\n%s", id, n.logs.String())
		}
	}
	// The host outlives the nodes on purpose.
	if pid := host.Running(c.hostDir); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}

// sql connects the test to the cluster's database, to read what no node
// should be asked (a request for a session nobody owns makes the node it
// reaches take it); closed when the test ends.
func (c *cluster) sql() *pgx.Conn {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func (c *cluster) waitFor(what string, ok func() bool) {
	c.t.Helper()
	end := time.Now().Add(deadline)
	for !ok() {
		if time.Now().After(end) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends an API request to base (a node or the balancer).
func do(t *testing.T, base, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, map[string]any{"error": err.Error()}
	}
	defer r.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(r.Body).Decode(&m)
	return r.StatusCode, m
}

// sseEvent is one durable event a stream delivered.
type sseEvent struct {
	ID, Type string
	Data     map[string]any
}

// followTurn follows the session's stream at base (reconnecting through
// whatever base leads to) in the background until a turn completes or ctx
// ends; the channel gets what it read.
func followTurn(ctx context.Context, t *testing.T, base, sid string) <-chan []sseEvent {
	out := make(chan []sseEvent, 1)
	go func() {
		out <- follow(ctx, t, base, "/session/"+sid+"/events", func(got []sseEvent) bool {
			return len(got) > 0 && got[len(got)-1].Type == "turn.completed"
		})
	}()
	return out
}

// follow reads the stream at base+path (reconnecting with Last-Event-ID
// whenever it breaks, through whatever base leads to) until stop returns
// true for the events so far or ctx ends.
func follow(ctx context.Context, t *testing.T, base, path string, stop func([]sseEvent) bool) []sseEvent {
	t.Helper()
	var got []sseEvent
	last := ""
	for ctx.Err() == nil && !stop(got) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil || r.StatusCode != http.StatusOK {
			if r != nil {
				r.Body.Close()
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		sc := bufio.NewScanner(r.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.Data)
			case line == "":
				if ev.ID != "" {
					got = append(got, ev)
					last = ev.ID
				}
				ev = sseEvent{}
				if stop(got) {
					r.Body.Close()
					return got
				}
			}
		}
		r.Body.Close()
	}
	return got
}
