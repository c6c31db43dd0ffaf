package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStandaloneFailoverInterrupts: a standalone agent is a child of its
// node and dies with it, so a node killed mid-turn leaves nothing for
// another node to attach to. The node that takes the session over
// (the takeover scan, once the lease expired) takes the existing
// interruption path: the turn ends interrupted, once, and a continue
// through that node runs a new agent there that completes it.
func TestStandaloneFailoverInterrupts(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	n1 := c.start("n1", "--executor", "standalone")
	n2 := c.start("n2", "--executor", "standalone")

	sid := createSession(t, n1.URL(), "standalone")
	if o := ownerOf(t, n1.URL(), sid); o != "n1" {
		t.Fatalf("owner of a session created on n1: got %q, want n1", o)
	}
	prompt(t, n1.URL(), sid, "/hang", "long")
	// Delivered, and answered: a continuation then asks the agent to go
	// on (one of a prompt never delivered would send it again, and
	// /hang would hang again).
	c.waitFor("the agent's first words", func() bool {
		_, tr := do(t, n1.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
		return strings.Contains(fmt.Sprint(tr["messages"]), "hanging")
	})
	c.kill9("n1")

	if st := waitTurn(t, n2.URL(), sid, "long"); st != "interrupted" {
		t.Fatalf("the standalone turn after its node was killed: got %s, want interrupted", st)
	}
	if o := ownerOf(t, n2.URL(), sid); o != "n2" {
		t.Errorf("owner after the takeover: got %q, want n2", o)
	}
	code, m := do(t, n2.URL(), http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "again"})
	if code != http.StatusAccepted {
		t.Fatalf("continue through n2: got %d %v, want 202", code, m)
	}
	if st := waitTurn(t, n2.URL(), sid, "again"); st != "completed" {
		t.Fatalf("the continuation: got %s, want completed", st)
	}

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	got := follow(ctx, t, n2.URL(), "/session/"+sid+"/events", func(got []sseEvent) bool {
		for _, e := range got {
			if e.Type == "turn.completed" && e.Data["promptId"] == "again" {
				return true
			}
		}
		return false
	})
	checkStream(t, got)
	var interrupted []any
	for _, e := range got {
		if e.Type == "turn.interrupted" {
			interrupted = append(interrupted, e.Data["promptId"])
		}
	}
	if len(interrupted) != 1 || interrupted[0] != "long" {
		t.Errorf("turn.interrupted events: got prompts %v, want one, of long", interrupted)
	}
	checkOneTruth(t, n2.URL(), sid)
}
