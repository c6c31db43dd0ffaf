package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rollingChunks and rollingPrompt: 4000 chunks in 100 bursts 100 ms
// apart, about 10 s: long enough for every node to be restarted under
// the turns.
const (
	rollingChunks = 4000
	rollingPrompt = "/stream 4000 40 100"
)

// TestRollingRestart: three nodes (the detached runtime) behind nginx,
// twelve sessions streaming; each node in turn is stopped (SIGTERM) and
// started again, the next one only once it is ready, as an operator
// upgrading them would. A stopping node hands its sessions over: no turn
// is interrupted, every turn's stored transcript holds every chunk once,
// in order, each session's stream followed through the balancer gets
// every event once, and every view is what the log implies.
func TestRollingRestart(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	ids := []string{"n1", "n2", "n3"}
	var nodes []*node
	for _, id := range ids {
		nodes = append(nodes, c.start(id, "--executor", "detached"))
	}
	lb := c.startBalancer(nodes...)

	sids := make([]string, 12)
	for i := range sids {
		sids[i] = createSession(t, lb.URL(), fmt.Sprintf("rolling %d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*deadline)
	defer cancel()
	streams := make([]<-chan []sseEvent, len(sids))
	for i, sid := range sids {
		streams[i] = followTurn(ctx, t, lb.URL(), sid)
		prompt(t, lb.URL(), sid, rollingPrompt, "long")
	}
	for _, sid := range sids {
		c.waitFor("every turn to stream", func() bool {
			_, tr := do(t, lb.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
			return strings.Contains(fmt.Sprint(tr["messages"]), "chunk 100\n")
		})
	}
	for _, id := range ids {
		began := time.Now()
		c.sigterm(id)
		c.start(id, "--executor", "detached")
		t.Logf("%s stopped and ready again in %s", id, time.Since(began).Round(time.Millisecond))
	}
	for i, sid := range sids {
		if st := waitTurn(t, lb.URL(), sid, "long"); st != "completed" {
			_, turn := do(t, lb.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
			t.Errorf("session %d: the turn through the rolling restart: got %s, want completed: %v", i, st, turn)
			continue
		}
		checkStream(t, <-streams[i])
		checkStoredChunks(t, lb.URL(), sid, "long", rollingChunks)
		checkOneTruth(t, lb.URL(), sid)
	}
}

// sigterm stops node id as an operator does (SIGTERM) and waits for it to
// exit.
func (c *cluster) sigterm(id string) {
	c.t.Helper()
	n := c.nodes[id]
	if n == nil || n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(deadline):
		// Its goroutines' stacks, in its log below, say where it hangs.
		_ = n.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-n.exited:
		case <-time.After(5 * time.Second):
		}
		c.t.Fatalf("node %s did not stop on SIGTERM (its goroutines at SIGQUIT are at the end of its log)", id)
	}
}
