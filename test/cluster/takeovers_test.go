package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const (
	// longChunks and longPrompt stream for about 25 s: 500 bursts of 20,
	// 50 ms apart, long enough for five takeovers mid-turn.
	longChunks = 10000
	longPrompt = "/stream 10000 20 50"
	takeovers  = 5
)

// TestRepeatedTakeovers: one turn of a session on the detached runtime
// goes through five takeovers in a row: its owner is killed (kill -9),
// another node takes the session once the lease expires and attaches to
// its agent, the killed node starts again, and the new owner is killed
// next. The turn completes, never interrupted; the client that follows it
// through the balancer gets every chunk once, in order; the stored
// transcript holds every chunk once, in order, and every view is what the
// log implies.
func TestRepeatedTakeovers(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	lb := c.startBalancer(c.start("n1", "--executor", "detached"), c.start("n2", "--executor", "detached"),
		c.start("n3", "--executor", "detached"))
	sid := createSession(t, lb.URL(), "takeovers")
	ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
	defer cancel()
	evs := followTurn(ctx, t, lb.URL(), sid)
	prompt(t, lb.URL(), sid, longPrompt, "long")
	c.waitFor("the turn to stream", func() bool {
		return strings.Contains(storedText(t, lb.URL(), sid, "long"), "chunk 200\n")
	})
	for round := 1; round <= takeovers; round++ {
		owner := ownerOf(t, lb.URL(), sid)
		if owner == "" {
			t.Fatalf("takeover %d: the session has no owner", round)
		}
		_, turn := do(t, lb.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
		if turn["state"] != "running" {
			t.Fatalf("takeover %d: the turn is %v, want it running (the test's turn is too short for its takeovers)", round, turn["state"])
		}
		c.kill9(owner)
		killed := time.Now()
		var next string
		c.waitFor(fmt.Sprintf("takeover %d", round), func() bool {
			next = ownerOf(t, lb.URL(), sid)
			return next != "" && next != owner
		})
		t.Logf("takeover %d: %s killed, %s owns the session after %s", round, owner, next, time.Since(killed).Round(time.Millisecond))
		c.start(owner, "--executor", "detached")
	}
	if st := waitTurn(t, lb.URL(), sid, "long"); st != "completed" {
		_, turn := do(t, lb.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
		t.Fatalf("the turn through %d takeovers: got %s, want completed: %v", takeovers, st, turn)
	}
	got := <-evs
	checkStream(t, got)
	for _, e := range got {
		if e.Type == "turn.interrupted" {
			t.Errorf("the turn was interrupted: %v", e.Data)
		}
	}
	checkStoredChunks(t, lb.URL(), sid, "long", longChunks)
	checkOneTruth(t, lb.URL(), sid)
}
