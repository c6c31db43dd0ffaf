package crash_test

import "github.com/tether/tether/internal/onetruth"

// checkOneTruth compares what the daemon serves about sid (its transcript,
// its status, its context and recovery plan) with what the session's own
// event log implies (issue 29: every view a projection of the log), and
// reports each difference; see package onetruth.
func (w *world) checkOneTruth(sid string) {
	w.t.Helper()
	onetruth.Daemon{Base: "http://" + w.addr, Token: token}.Check(w.t, sid)
}
