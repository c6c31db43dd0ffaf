package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGlobalStreamAcrossNodes: sessions are created on all three nodes
// at once, so their writers take global ids side by side and commit them
// out of order, while clients of each node, at staggered moments, list
// the sessions (GET /sessions and its cursor) and stream GET /events
// from that cursor, and another streams from the start. Each listing
// client gets every session the list did not hold exactly once on its
// stream and none the list held; every stream's ids rise; the streams
// from the start get every session once. A node that delivered an id
// before a lower one committed, or a list cursor ahead of what its
// snapshot held, loses a session here.
func TestGlobalStreamAcrossNodes(t *testing.T) {
	c := newCluster(t, 10*time.Second)
	nodes := []*node{c.start("n1"), c.start("n2"), c.start("n3")}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	const perNode = 12
	total := perNode * len(nodes)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	sids := make(chan string, total)
	for _, n := range nodes {
		wg.Go(func() {
			<-begin
			for i := range perNode {
				sids <- createSession(t, n.URL(), fmt.Sprintf("%s %d", n.id, i))
			}
		})
	}
	created := func(evs []sseEvent) map[string]int {
		seen := map[string]int{}
		for _, e := range evs {
			if e.Type == "session.created" {
				sid, _ := e.Data["sessionId"].(string)
				seen[sid]++
			}
		}
		return seen
	}
	type outcome struct {
		who    string
		listed map[string]bool
		evs    []sseEvent
	}
	const listsPerNode = 4
	results := make(chan outcome, (1+listsPerNode)*len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			evs := follow(ctx, t, n.URL(), "/events", func(got []sseEvent) bool { return len(created(got)) >= total })
			results <- outcome{who: n.id + " from the start", evs: evs}
		})
		for k := range listsPerNode {
			wg.Go(func() {
				<-begin
				time.Sleep(time.Duration(40*(k*len(nodes)+i+1)) * time.Millisecond)
				code, list := do(t, n.URL(), http.MethodGet, "/sessions?limit=200", nil)
				if code != http.StatusOK {
					t.Errorf("%s: list sessions: got %d %v", n.id, code, list)
					results <- outcome{who: n.id}
					return
				}
				listed := map[string]bool{}
				for _, s := range asList(list["sessions"]) {
					listed[s["id"].(string)] = true
				}
				cursor, _ := list["cursor"].(string)
				evs := follow(ctx, t, n.URL(), "/events?cursor="+cursor, func(got []sseEvent) bool { return len(listed)+len(created(got)) >= total })
				results <- outcome{who: fmt.Sprintf("%s after a list of %d", n.id, len(listed)), listed: listed, evs: evs}
			})
		}
	}
	close(begin)
	wg.Wait()
	close(results)
	// The agents have started before the sessions' directories go.
	close(sids)
	for sid := range sids {
		c.waitFor("session "+sid+" to wait for input", func() bool {
			_, s := do(t, nodes[0].URL(), http.MethodGet, "/session/"+sid, nil)
			return s["state"] == "WAITING_FOR_INPUT"
		})
	}
	for r := range results {
		var last int64
		for _, e := range r.evs {
			_, n, _ := strings.Cut(e.ID, ":")
			id, err := strconv.ParseInt(n, 10, 64)
			if err != nil || id <= last {
				t.Errorf("%s: event id %s after %d: want rising global ids", r.who, e.ID, last)
			}
			last = id
		}
		seen := created(r.evs)
		for sid, k := range seen {
			switch {
			case r.listed[sid]:
				t.Errorf("%s: session %s is in the list and on the stream after its cursor", r.who, sid)
			case k > 1:
				t.Errorf("%s: session %s created %d times on the stream", r.who, sid, k)
			}
		}
		if got := len(r.listed) + len(seen); got != total {
			t.Errorf("%s: %d sessions listed and %d streamed, want %d in all", r.who, len(r.listed), len(seen), total)
		}
	}
}
