package cluster_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// hookSink records the webhook-ids a webhook delivered, in order of
// arrival.
type hookSink struct {
	mu  sync.Mutex
	ids []string
}

func (s *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.ids = append(s.ids, r.Header.Get("webhook-id"))
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// firstArrivals is the ids in order of their first arrival.
func (s *hookSink) firstArrivals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, id := range s.ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TestWebhookAcrossNodes (issue 33): three nodes write turns side by side
// (global ids commit out of order across their writers), one node at a
// time delivers the webhook, and the nodes that deliver it are killed
// with SIGKILL one after the other. The webhook gets every turn's end of
// the log once at least, in the log's order: none passed over for an id
// that committed late, none lost to a delivering node's death.
func TestWebhookAcrossNodes(t *testing.T) {
	sink := &hookSink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	c := newCluster(t, 3*time.Second)
	nodes := []*node{c.start("n1"), c.start("n2"), c.start("n3")}
	code, hook := do(t, nodes[0].URL(), http.MethodPost, "/webhooks", map[string]any{"url": srv.URL, "events": []string{"turn.ended"}})
	if code != http.StatusCreated {
		t.Fatalf("create webhook: got %d %v", code, hook)
	}
	turns := func(live []*node, round int) {
		var wg sync.WaitGroup
		for _, n := range live {
			wg.Go(func() {
				sid := createSession(t, n.URL(), fmt.Sprintf("%s round %d", n.id, round))
				for k := range 3 {
					pid := fmt.Sprintf("r%d-%d", round, k)
					prompt(t, n.URL(), sid, "/echo hi", pid)
					if st := waitTurn(t, n.URL(), sid, pid); st != "completed" {
						t.Errorf("turn %s on %s: got %s, want completed", pid, n.id, st)
					}
				}
			})
		}
		wg.Wait()
	}
	turns(nodes, 1)
	// n1 started first and took the delivery; then n2 may have it.
	c.kill9("n1")
	turns(nodes[1:], 2)
	c.kill9("n2")
	turns(nodes[2:], 3)

	var want []string
	for _, f := range testbin.ReplayGlobal(t, nil, nodes[2].URL(), token) {
		if f.Event == "turn.completed" {
			want = append(want, strings.Replace(f.ID, ":", "_", 1))
		}
	}
	if len(want) != 3*(3+2+1) {
		t.Fatalf("the log holds %d turn ends, want 18", len(want))
	}
	var got []string
	c.waitFor("every turn's end delivered", func() bool {
		got = sink.firstArrivals()
		return len(got) >= len(want)
	})
	if !slices.Equal(got, want) {
		t.Fatalf("delivered (first arrivals): %v\nwant the log's order: %v", got, want)
	}
	// n1 and n2 are gone: n3 delivers now.
	req, _ := http.NewRequest(http.MethodGet, nodes[2].URL()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if r, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !strings.Contains(string(b), "\ntether_webhook_leader 1\n") {
			t.Errorf("n3's /metrics: no tether_webhook_leader 1")
		}
	}
	if _, h := do(t, nodes[2].URL(), http.MethodGet, "/webhooks/"+hook["id"].(string), nil); h["state"] != "active" {
		t.Errorf("the webhook: got %v, want active", h)
	}
}
