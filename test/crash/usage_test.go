package crash_test

import (
	"encoding/json"
	"testing"
)

// TestUsageOnEveryRuntime (issue 33): the agent's usage_update reports and
// its answer's token usage reach the turn's and the session's usage
// whether the agent is the daemon's child or runs in an executor host (its
// lines forwarded undecoded, the answer's usage among them, in order
// before the turn's end), and survive a kill -9 of tetherd.
func TestUsageOnEveryRuntime(t *testing.T) {
	for _, rt := range []string{"standalone", "detached"} {
		t.Run(rt, func(t *testing.T) {
			w := hostedWorld(t)
			w.start()
			sid, _ := w.createSessionOn("demo", rt)
			w.prompt(sid, "/usage 2", "u1")
			w.waitTurn(sid, "u1")
			check := func(when string) {
				t.Helper()
				turn, _ := json.Marshal(w.turn(sid, "u1")["usage"])
				if want := `{"cachedReadTokens":10,"contextSize":200000,"contextUsed":2000,"inputTokens":200,"outputTokens":20,"totalTokens":220}`; string(turn) != want {
					t.Errorf("%s: turn u1's usage: got %s, want %s", when, turn, want)
				}
				sess, _ := json.Marshal(w.get("/session/" + sid)["usage"])
				if want := `{"cachedReadTokens":10,"contextSize":200000,"contextUsed":2000,"cost":{"amount":0.02,"currency":"USD"},"inputTokens":200,"outputTokens":20,"totalTokens":220}`; string(sess) != want {
					t.Errorf("%s: the session's usage: got %s, want %s", when, sess, want)
				}
			}
			check("after the turn")
			w.kill9()
			w.start()
			check("after kill -9")
		})
	}
}
