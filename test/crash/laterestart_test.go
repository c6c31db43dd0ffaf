package crash_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLateOutputSurvivesRestart (issue 28, item 5, tried from outside): a
// remote host's link is cut mid-turn past --host-lost-after, so the turn
// is interrupted (executor_lost) while the agent finishes its reply on
// the host; then tetherd is restarted. The lost agent's late output must
// not die with the daemon's memory: once the host is back, the restarted
// daemon records the rest of what the agent sent as the interrupted
// turn's late output (each chunk once, one notice), stops the agent on
// the host, and a continue afterwards runs after it. Cases: killed (-9)
// or stopped (SIGTERM) while the host is lost; killed while the late
// output is being delivered; and a continue sent while the restarted
// daemon has not reached the host yet, which must wait for the late
// output instead of replacing the agent; and a continue while the
// restarted daemon has given the host up again, which is refused as on
// any lost host (503 executor_unavailable) and leaves the late output to
// be taken up once the host is back. In that case the continue, as
// first written, got no answer: the failed take-up started the take-up
// again at once, for as long as the host stayed lost.
//
// Before the fix the daemon kept what it awaited in memory only: after
// the restart p1 kept the 10 chunks it had before the cut, with no
// notice, the agent ran on on the host (GET /executors: exited false, its
// records in its outbox) until a start replaced it; killed during the
// delivery, the chunks not yet delivered were lost.
func TestLateOutputSurvivesRestart(t *testing.T) {
	t.Parallel() // it mostly waits (a grace, a cut): beside the others
	tests := []struct {
		name string
		// stream is /stream's N EVERY MS: most of it comes during the cut.
		chunks, every, ms int
		stop              func(w *world)
		// duringDelivery: the daemon is stopped once the late output
		// began to arrive (the link is back), not while the host is lost.
		duringDelivery bool
		// continueEarly: the daemon restarts while the link is still down
		// and is asked to continue before it reaches the host.
		continueEarly bool
		// lostOnRestart: the restarted daemon gives the host up too
		// before the link is back, and is asked to continue meanwhile.
		lostOnRestart bool
	}{
		{name: "kill -9 while lost", chunks: 120, every: 10, ms: 250, stop: (*world).kill9},
		{name: "SIGTERM while lost", chunks: 120, every: 10, ms: 250, stop: (*world).term},
		{name: "kill -9 during delivery", chunks: 3000, every: 100, ms: 50, stop: (*world).kill9, duringDelivery: true},
		{name: "continue before the host is back", chunks: 120, every: 10, ms: 250, stop: (*world).kill9, continueEarly: true},
		{name: "continue while the host is lost again", chunks: 120, every: 10, ms: 250, stop: (*world).kill9, lostOnRestart: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ns := lostAfterWorld(t)
			sid, _ := w.createSessionOn("demo", "far")
			fol := w.follow(sid)
			w.prompt(sid, fmt.Sprintf("/stream %d %d %d", tc.chunks, tc.every, tc.ms), "p1")
			w.waitSeen(fol, "the turn's first chunk", isChunkOf(t, "p1"))
			ns.SetLink(false)
			w.waitHost("far", "lost", hostState("lost"))
			if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" || turn["interruptReason"] != "executor_lost" {
				t.Fatalf("p1 during the cut: got %v (%v), want interrupted by executor_lost", turn["state"], turn["interruptReason"])
			}
			if before := w.agentText(sid)["p1"]; strings.Count(before, "chunk ") >= tc.chunks {
				t.Fatalf("the whole reply arrived before the cut (%q): the cut must land mid-turn", tail(before))
			}
			// The agent finishes on the host meanwhile (its outbox keeps it).
			time.Sleep(4 * time.Second)
			if tc.duringDelivery {
				ns.SetLink(true)
				w.waitSeen(fol, "the late output's notice", func(f frame) bool {
					p := f.JSON(t)
					text, _ := p["text"].(string)
					return f.Event == "message.added" && p["role"] == "system" && strings.HasPrefix(text, "Late output")
				})
			}
			tc.stop(w)
			fol.stop()
			if tc.duringDelivery {
				n := 0
				for _, f := range fol.seen() {
					if isChunkOf(t, "p1")(f) {
						n++
					}
				}
				t.Logf("the daemon was stopped with %d of p1's %d chunks streamed to the client", n, tc.chunks)
			}

			restart := append(slices.Clone(pingFlags), "--host-lost-after", "30s")
			early := make(chan string, 1)
			switch {
			case tc.lostOnRestart:
				w.start(append(slices.Clone(pingFlags), "--host-lost-after", "2s")...)
				w.waitHost("far", "lost after the restart", hostState("lost"))
				// Refused as on any lost host; the late output stays on it.
				go func() { early <- w.continueAsync(sid, "") }()
				select {
				case got := <-early:
					if !strings.HasPrefix(got, "503 ") || !strings.Contains(got, "executor_unavailable") {
						t.Fatalf("continue while the host is lost: got %s, want 503 executor_unavailable", got)
					}
				case <-time.After(deadline):
					t.Fatalf("continue while the host is lost: no answer in %s", deadline)
				}
				ns.SetLink(true)
			case tc.continueEarly:
				w.start(restart...)
				go func() { early <- w.continueAsync(sid, "c1") }()
				time.Sleep(500 * time.Millisecond) // the continue reaches the daemon first
				ns.SetLink(true)
			default:
				ns.SetLink(true)
				w.start(restart...)
			}

			var want strings.Builder
			for i := 1; i <= tc.chunks; i++ {
				fmt.Fprintf(&want, "chunk %d\n", i)
			}
			w.waitFor("the late output", func() bool { return w.agentText(sid)["p1"] == want.String() })
			checkLateOutput(t, w, sid, want.String())
			if tc.continueEarly {
				if got := <-early; got != "202" {
					t.Fatalf("continue sent before the host was back: got %s, want 202", got)
				}
			} else {
				w.waitHost("far", "done with the lost agent", func(h map[string]any) bool {
					for _, s := range list(h, "sessions") {
						if s["sessionId"] == sid && s["exited"] != true {
							return false
						}
					}
					return true
				})
				code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
				if code != http.StatusAccepted {
					t.Fatalf("continue: got %d %v, want 202", code, m)
				}
			}
			if turn := w.waitTurn(sid, "c1"); turn["state"] != "completed" {
				t.Fatalf("continuation: got %v, want completed", turn)
			}
			if got := w.agentText(sid)["p1"]; got != want.String() {
				t.Errorf("p1's text changed after the continuation: %d bytes ending %q", len(got), tail(got))
			}
			checkAfterLate(t, w, sid)
		})
	}
}

// checkLateOutput checks p1's record once its late output is in: its
// text in the log is want, each chunk once; the late output is one
// message, after one notice, in the transcript as in the log.
func checkLateOutput(t *testing.T, w *world, sid, want string) {
	t.Helper()
	var order []string
	for _, m := range list(w.transcript(sid), "messages") {
		if m["promptId"] != "p1" {
			continue
		}
		switch text := m["text"].(string); {
		case m["role"] == "system":
			order = append(order, strings.SplitN(text, ":", 2)[0])
		case m["role"] == "agent":
			order = append(order, "agent")
		}
	}
	if got, want := strings.Join(order, ", "), "agent, Turn interrupted, Late output, agent"; got != want {
		t.Errorf("p1's messages in the transcript: got %s, want %s", got, want)
	}
	var logged strings.Builder
	var notices []string
	for _, f := range w.replay(sid) {
		p := f.JSON(t)
		if p["promptId"] != "p1" || (f.Event != "message.added" && f.Event != "message.chunk") {
			continue
		}
		switch p["role"] {
		case "agent":
			logged.WriteString(p["text"].(string))
		case "system":
			notices = append(notices, strings.SplitN(p["text"].(string), ":", 2)[0])
		}
	}
	if logged.String() != want {
		t.Errorf("the log's agent text of p1: got %d bytes ending %q, want every chunk once (%d bytes)", logged.Len(), tail(logged.String()), len(want))
	}
	if got := strings.Join(notices, "|"); got != "Turn interrupted|Late output" {
		t.Errorf("p1's system messages in the log: got %s, want Turn interrupted|Late output", got)
	}
}

// checkAfterLate checks that the continuation's turn comes after the whole
// of p1's late output, in the log and in the transcript.
func checkAfterLate(t *testing.T, w *world, sid string) {
	t.Helper()
	lastP1, firstC1 := -1, -1
	for i, f := range w.replay(sid) {
		switch f.JSON(t)["promptId"] {
		case "p1":
			lastP1 = i
		case "c1":
			if firstC1 < 0 {
				firstC1 = i
			}
		}
	}
	if firstC1 < 0 || lastP1 > firstC1 {
		t.Errorf("the log: p1's last event at %d, c1's first at %d; want all of p1 (its late output) before c1", lastP1, firstC1)
	}
	var prompts []string
	for _, m := range list(w.transcript(sid), "messages") {
		if p, _ := m["promptId"].(string); len(prompts) == 0 || prompts[len(prompts)-1] != p {
			prompts = append(prompts, p)
		}
	}
	if got := strings.Join(prompts, " "); got != "p1 c1" {
		t.Errorf("the transcript's messages by turn: got %s, want p1's, then c1's", got)
	}
}

// continueAsync posts a continue from a goroutine other than the test's
// (w.do may fail the test, which only the test's goroutine may do), and
// returns the answer's status, or the error and body.
func (w *world) continueAsync(sid, promptID string) string {
	body := "{}"
	if promptID != "" {
		body = fmt.Sprintf(`{"promptId":%q}`, promptID)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+w.addr+"/session/"+sid+"/continue", strings.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return "202"
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}
