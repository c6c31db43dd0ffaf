package onetruth

import (
	"fmt"
	"sort"
	"testing"
)

// The status: GET /session/{id}/status carries no cursor, so the check
// reads the log, then the status, then the log again. The status was
// answered at one moment between the two reads, when the log was a prefix
// of the second read at least as long as the first: the members the log
// determines must equal, together, what one of those prefixes implies.
// Nothing is waited for, and a daemon that is busy gets no slack: the
// window is where the answer was made, no wider.
//
// The members compared are the log's facts: the session's state (the last
// session.created, session.state_changed or session.closed), contextLost
// (the last session.resumed: neither restored nor injected) and
// executorStatus (the last session.executor_status; "stopped" before any,
// as a session is created), and the executor's record the log carries:
// runtime and worktree (session.created names them, every
// session.executor_status carries them again) and agentExecutionId (the
// last session.executor_status's). Left out as not log facts: isAgentRunning,
// isResumable, needsResume and resumeReason (whether the daemon holds the
// agent process now, whether its pid answers a signal, whether the working
// directory exists), errorMessage and errorCode (they carry the live
// actor's last start error too), historyContextInjection (the profile's
// setting), workspace (whether the executor host is connected now) and
// node (which node holds the lease now). The status serves neither
// queueHeld nor the running and queued turns: the context's recovery plan
// does, and plan.go checks them there.

// facts is what the log up to some event says of a session, as far as
// the status and the context serve it.
type facts struct {
	state       any
	contextLost bool
	executor    any
	// runtime, execution, worktreePath and worktreeBranch are the
	// executor's record as the log last gave it.
	runtime, execution           any
	worktreePath, worktreeBranch any
	queueHeld                    bool
	// turns are the turns' states and their numbers (turn.queued's seq).
	turns map[string]string
	seqs  map[string]float64
	// plan is the last session.recovery_changed's plan, nil before any.
	plan any
}

func newFacts() *facts {
	return &facts{executor: "stopped", turns: map[string]string{}, seqs: map[string]float64{}}
}

// apply folds one event.
func (f *facts) apply(e event) {
	p := e.Data
	pid, _ := p["promptId"].(string)
	switch e.Type {
	case "session.created":
		f.state = p["state"]
		f.executorRecord(p)
	case "session.state_changed", "session.closed":
		f.state = p["state"]
	case "session.resumed":
		// As internal/session SessionResumedData.Context: what a restore
		// neither restored nor injects is lost.
		restored, _ := p["contextRestored"].(bool)
		f.contextLost = !restored && p["strategy"] != "history_injection"
	case "session.executor_status":
		f.executor = p["status"]
		f.executorRecord(p)
		f.execution = p["agentExecutionId"]
	case "session.queue_held":
		f.queueHeld, _ = p["held"].(bool)
	case "session.recovery_changed":
		f.plan = p["recovery"]
	case "turn.queued":
		f.turns[pid] = "queued"
		f.seqs[pid], _ = p["seq"].(float64)
	case "turn.started":
		f.turns[pid] = "running"
	case "turn.completed", "turn.failed", "turn.cancelled", "turn.interrupted":
		f.turns[pid], _ = p["state"].(string)
	}
}

// executorRecord takes the executor's runtime and worktree from the
// payload of session.created or session.executor_status.
func (f *facts) executorRecord(p map[string]any) {
	f.runtime = p["runtime"]
	f.worktreePath, f.worktreeBranch = nil, nil
	if w, ok := p["worktree"].(map[string]any); ok {
		f.worktreePath, f.worktreeBranch = w["path"], w["branch"]
	}
}

// statusView is the status members the log determines.
func (f *facts) statusView() map[string]any {
	return map[string]any{"state": f.state, "contextLost": f.contextLost, "executorStatus": f.executor,
		"runtime": f.runtime, "agentExecutionId": f.execution, "worktreePath": f.worktreePath, "worktreeBranch": f.worktreeBranch}
}

// servedStatus is the members of status st the log determines
// (statusView).
func servedStatus(st map[string]any) map[string]any {
	out := newFacts().statusView() // its members, the only list of them
	for k := range out {
		out[k] = st[k]
	}
	return out
}

// queued is the queued turns in the order they run (by number), and
// whether a turn runs.
func (f *facts) queued() (ids []string, running bool) {
	ids = []string{}
	for id, st := range f.turns {
		switch st {
		case "queued":
			ids = append(ids, id)
		case "running":
			running = true
		}
	}
	sort.Slice(ids, func(i, j int) bool { return f.seqs[ids[i]] < f.seqs[ids[j]] })
	return ids, running
}

// factsAt folds log up to seq upTo.
func factsAt(log []event, upTo int64) *facts {
	f := newFacts()
	for _, e := range log {
		if e.Seq > upTo {
			break
		}
		f.apply(e)
	}
	return f
}

// checkStatus compares the status of sid with the log around it.
func (d Daemon) checkStatus(t testing.TB, sid string) {
	t.Helper()
	before := d.replay(t, sid)
	var st map[string]any
	if d.get(t, "/session/"+sid+"/status", &st) != 200 {
		return
	}
	after := d.replay(t, sid)
	served := servedStatus(st)
	from := head(before)
	f := newFacts()
	var nearest map[string]any
	for _, e := range after {
		f.apply(e)
		if e.Seq < from {
			continue
		}
		nearest = f.statusView()
		if jsonEqual(served, nearest) {
			return // the log at e says what the status says
		}
	}
	if nearest == nil { // an empty log
		nearest = f.statusView()
	}
	at := "at the log's head"
	if from != head(after) {
		at = fmt.Sprintf("at every event from %d to %d, the log moving meanwhile (shown: %d)", from, head(after), head(after))
	}
	differ(t, "status of "+sid, at, served, nearest)
}
