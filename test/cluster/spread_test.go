package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// liveOwnerSQL reads the node whose lease of a session is live.
const liveOwnerSQL = "SELECT node_id FROM session_leases WHERE session_id = $1 AND expires_at > clock_timestamp()"

// TestTakeoverSpreads: a node that owned six streaming sessions is killed
// (kill -9) once two others joined; the two survivors share them (each
// takes its part of the orphans, and what the killed node's rebalance
// handed over before) instead of one taking all, and every turn goes on
// to its end with every chunk stored once, though each survivor's
// --max-agents is below its part.
func TestTakeoverSpreads(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	n1 := c.start("n1", "--executor", "detached")
	sids := make([]string, 6)
	for i := range sids {
		sids[i] = createSession(t, n1.URL(), fmt.Sprintf("spread %d", i))
		prompt(t, n1.URL(), sids[i], outagePrompt, "long")
	}
	// n1 alone: it owns every session (with others live, its rebalance
	// would hand some over as soon as it looks, every TTL).
	for _, sid := range sids {
		if o := ownerOf(t, n1.URL(), sid); o != "n1" {
			t.Fatalf("a session created on n1, the only node, is owned by %q", o)
		}
		c.waitFor("every turn to stream", func() bool {
			return strings.Contains(storedText(t, n1.URL(), sid, "long"), "chunk 100\n")
		})
	}
	// The survivors' agent limit is below what they take: an agent that
	// runs on its host already is taken up whatever the limit (refusing
	// it would not stop it, only lose its turn); new agents wait.
	n2 := c.start("n2", "--executor", "detached", "--max-agents", "2")
	c.start("n3", "--executor", "detached", "--max-agents", "2")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn := c.sql()
	// n1's rebalance may have handed sessions over already; it keeps its
	// share (two of six among three nodes), which the kill leaves to the
	// takeover.
	held := 0
	for _, sid := range sids {
		var o string
		if conn.QueryRow(ctx, liveOwnerSQL, sid).Scan(&o) == nil && o == "n1" {
			held++
		}
	}
	t.Logf("n1 held %d of the six sessions when it was killed", held)
	if held == 0 {
		t.Fatalf("n1 held none of its sessions when it was killed: nothing to take over")
	}
	c.kill9("n1")
	// Read from the lease table, not asked of a node: a request for a
	// session nobody owns makes the node it reaches take it.
	owners := map[string]int{}
	for _, sid := range sids {
		var o string
		c.waitFor("the session to be taken over", func() bool {
			err := conn.QueryRow(ctx, liveOwnerSQL, sid).Scan(&o)
			return err == nil && (o == "n2" || o == "n3")
		})
		owners[o]++
	}
	t.Logf("the survivors took n1's sessions: %v", owners)
	if owners["n2"] == 0 || owners["n3"] == 0 {
		t.Errorf("n1's sessions were taken as %v, want them shared by n2 and n3", owners)
	}
	for i, sid := range sids {
		if st := waitTurn(t, n2.URL(), sid, "long"); st != "completed" {
			_, turn := do(t, n2.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
			t.Errorf("session %d after the takeover: got %s, want completed: %v", i, st, turn)
			continue
		}
		checkStoredChunks(t, n2.URL(), sid, "long", streamChunks)
	}
}

// TestJoiningNodeTakesItsShare: one node owns six sessions streaming on
// the detached runtime; a second node joins and gets its share, handed
// over by the first (their agents stay on their host, and the new owner
// attaches to them): each node ends up with three, and every turn goes
// on to its end with every chunk stored once, uninterrupted.
func TestJoiningNodeTakesItsShare(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	n1 := c.start("n1", "--executor", "detached")
	sids := make([]string, 6)
	for i := range sids {
		sids[i] = createSession(t, n1.URL(), fmt.Sprintf("join %d", i))
		prompt(t, n1.URL(), sids[i], rollingPrompt, "long")
	}
	for _, sid := range sids {
		c.waitFor("every turn to stream", func() bool {
			return strings.Contains(storedText(t, n1.URL(), sid, "long"), "chunk 100\n")
		})
	}
	c.start("n2", "--executor", "detached")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	conn := c.sql()
	var held map[string]int
	c.waitFor("n2 to take its share", func() bool {
		held = map[string]int{}
		for _, sid := range sids {
			var n string
			if conn.QueryRow(ctx, liveOwnerSQL, sid).Scan(&n) == nil {
				held[n]++
			}
		}
		return held["n2"] == 3 && held["n1"] == 3
	})
	t.Logf("leases after n2 joined: %v", held)
	for i, sid := range sids {
		if st := waitTurn(t, n1.URL(), sid, "long"); st != "completed" {
			_, turn := do(t, n1.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
			t.Errorf("session %d through the hand-over: got %s, want completed: %v", i, st, turn)
			continue
		}
		checkStoredChunks(t, n1.URL(), sid, "long", rollingChunks)
		checkOneTruth(t, n1.URL(), sid)
	}
}
