package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/testbin"
)

// outagePrompt streams 3000 chunks for about 6 s: 60 bursts of 50,
// 100 ms apart, so a cut of the database lands mid-turn.
const outagePrompt = "/stream 3000 50 100"

// TestDatabaseOutage: a node's path to PostgreSQL is cut for 5 s mid-turn
// (a proxy the test controls drops every connection and refuses new ones),
// shorter than the lease's TTL, or longer, and for 60 s (the whole turn
// then waits in the host's outbox): no other node takes the
// sessions, and the node takes their leases again. While it cannot
// commit, clients get 503 with Retry-After, never a 500 (a change asked
// for is refused whole, and /ready says no); what the
// agent sends meanwhile is not lost: once the database is back, the turn
// completes and its log and stored transcript hold every chunk once, in
// order, as every view says (the one truth check). For the detached
// runtime (the output waits in the host's outbox) and the standalone one
// (it waits in the daemon).
func TestDatabaseOutage(t *testing.T) {
	for _, tc := range []struct {
		runtime  string
		ttl, cut time.Duration
		// atCommit cuts as a COMMIT is sent (the stream's chunks commit
		// all the time), after it reaches the server and before its
		// answer can come back: the node cannot know it committed.
		atCommit bool
	}{
		{"detached", 10 * time.Second, 5 * time.Second, false},
		{"standalone", 10 * time.Second, 5 * time.Second, false},
		{"detached", 2 * time.Second, 5 * time.Second, false},
		{"standalone", 2 * time.Second, 5 * time.Second, false},
		{"detached", 10 * time.Second, 60 * time.Second, false},
		{"detached", 10 * time.Second, 5 * time.Second, true},
	} {
		name := fmt.Sprintf("%s, lease TTL %s, cut %s", tc.runtime, tc.ttl, tc.cut)
		if tc.atCommit {
			name += " as a commit is sent"
		}
		t.Run(name, func(t *testing.T) {
			runtime := tc.runtime
			c := newCluster(t, tc.ttl)
			u, err := url.Parse(c.db)
			if err != nil {
				t.Fatal(err)
			}
			proxy := testbin.NewProxy(t, u.Host)
			u.Host = proxy.Addr()
			a := c.start("a", "--executor", runtime, "--database", u.String())

			sid := createSession(t, a.URL(), "outage")
			ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
			defer cancel()
			evs := followTurn(ctx, t, a.URL(), sid)
			prompt(t, a.URL(), sid, outagePrompt, "long")
			c.waitFor("the turn to stream", func() bool {
				_, tr := do(t, a.URL(), http.MethodGet, "/session/"+sid+"/transcript", nil)
				return strings.Contains(fmt.Sprint(tr["messages"]), "chunk 300\n")
			})

			if tc.atCommit {
				select {
				case <-proxy.CutAfter([]byte("commit\x00"), false):
				case <-time.After(deadline):
					t.Fatal("no COMMIT was sent while the turn streamed")
				}
			} else {
				proxy.Cut()
			}
			answers := map[int]int{}
			for end := time.Now().Add(tc.cut); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
				code, body, retry := get(t, a.URL(), "/session/"+sid+"/transcript")
				answers[code]++
				if code >= 500 && (code != http.StatusServiceUnavailable || retry == "") {
					t.Errorf("during the outage: got %d (Retry-After %q) %s, want 200, or 503 with Retry-After", code, retry, body)
				}
			}
			// A change asked for meanwhile is refused whole, so asking
			// again later is safe; the node says it is not ready.
			code, m := do(t, a.URL(), http.MethodPost, "/session/"+sid+"/prompt",
				map[string]any{"prompt": []map[string]any{{"type": "text", "text": "/echo during"}}, "promptId": "during"})
			if code != http.StatusServiceUnavailable || m["code"] != "database_unavailable" {
				t.Errorf("a prompt during the outage: got %d %v, want 503 database_unavailable", code, m)
			}
			if code, _, _ := get(t, a.URL(), "/ready"); code != http.StatusServiceUnavailable {
				t.Errorf("GET /ready during the outage: got %d, want 503", code)
			}
			proxy.Restore()
			t.Logf("answers to GET transcript during the %s outage: %v", tc.cut, answers)
			if code, _ := do(t, a.URL(), http.MethodGet, "/session/"+sid+"/turns/during", nil); code != http.StatusNotFound {
				t.Errorf("the prompt refused during the outage: got %d for its turn, want 404 (nothing of it done)", code)
			}

			// Longer than the lease, the node cannot know that no other
			// node took the session meanwhile: it let the session go, and
			// takes it up again as a node that took it over would. A
			// hosted agent went on on its host, and its turn with it; a
			// standalone one ran in this node and was stopped: its turn
			// is interrupted after what was committed, and continues.
			want := "completed"
			if runtime == "standalone" && tc.ttl < tc.cut {
				want = "interrupted"
			}
			if st := waitTurn(t, a.URL(), sid, "long"); st != want {
				_, turn := do(t, a.URL(), http.MethodGet, "/session/"+sid+"/turns/long", nil)
				t.Fatalf("the turn after the outage: got %s, want %s: %v", st, want, turn)
			}
			if want == "interrupted" {
				checkStoredPrefix(t, a.URL(), sid, "long")
				if code, m := do(t, a.URL(), http.MethodPost, "/session/"+sid+"/continue", nil); code != http.StatusAccepted {
					t.Fatalf("continue after the outage: got %d %v", code, m)
				} else if st := waitTurn(t, a.URL(), sid, m["promptId"].(string)); st != "completed" {
					t.Fatalf("the continuation: got %s, want completed", st)
				}
				checkOneTruth(t, a.URL(), sid)
				return
			}
			got := <-evs
			checkStream(t, got)
			checkStoredChunks(t, a.URL(), sid, "long", streamChunks)
			checkOneTruth(t, a.URL(), sid)
			if logs := a.logs.String(); strings.Contains(logs, "panic") {
				t.Errorf("the node panicked during the outage:\n%s", logs)
			}
		})
	}
}

// get reads path from base, returning the status, the body and its
// Retry-After header.
func get(t *testing.T, base, path string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), ""
	}
	defer r.Body.Close()
	var b strings.Builder
	buf := make([]byte, 512)
	n, _ := r.Body.Read(buf)
	b.Write(buf[:n])
	return r.StatusCode, b.String(), r.Header.Get("Retry-After")
}

// checkStoredPrefix fails unless turn promptID's agent text in the stored
// transcript is chunks 1..k of /stream for some k: an interrupted turn
// keeps what was committed, once each, in order, and nothing after a gap.
func checkStoredPrefix(t *testing.T, base, sid, promptID string) {
	t.Helper()
	stored := storedText(t, base, sid, promptID)
	var want strings.Builder
	k := 0
	for want.Len() < len(stored) {
		k++
		fmt.Fprintf(&want, "chunk %d\n", k)
	}
	if stored != want.String() {
		t.Errorf("the stored transcript of interrupted turn %s: %d bytes, not chunks 1..%d once each, in order", promptID, len(stored), k)
	}
	t.Logf("interrupted after chunk %d", k)
}
