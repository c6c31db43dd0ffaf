package sessions

import (
	"context"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// The actor's folded state: what the session's log says, as far as its
// recovery plan reads it (session.State, Recent). It is seeded from the
// rows when it is first read (the rows are the log's projection up to the
// head seq read with them) and then evolves by the events the actor's own
// writes committed, folded in log order when a read needs them, so
// /context, /status and /continue plan without reading the store. Folding
// never decodes: the writer hands back the payloads it encoded
// (events.Pending.Committed).

// maxUnfolded bounds the committed writes an actor keeps before it folds
// them (a session nobody reads still folds, in steps).
const maxUnfolded = 256

// seedState reads, in r's snapshot, the rows a Recent state starts from:
// besides sess and turns (read with them), the output of the latest turn
// that ran, the pending permissions, the log's head and the history check.
func seedState(ctx context.Context, r *store.Store, h *historyChecks, sess session.Session, turns []session.Turn) (*session.State, string, error) {
	var msgs []session.Message
	var calls []session.ToolCall
	if last := session.LastRun(turns); last != nil {
		var err error
		if msgs, err = r.ListTurnMessages(ctx, sess.ID, last.PromptID); err != nil {
			return nil, "", err
		}
		if calls, err = r.ListTurnToolCalls(ctx, sess.ID, last.PromptID); err != nil {
			return nil, "", err
		}
	}
	pending, err := r.ListPendingPermissions(ctx, sess.ID)
	if err != nil {
		return nil, "", err
	}
	b, err := r.SessionEventBounds(ctx, sess.ID)
	if err != nil {
		return nil, "", err
	}
	gap, err := h.check(ctx, r, sess.ID)
	if err != nil {
		return nil, "", err
	}
	return session.Seed(sess, turns, msgs, calls, pending, b.Head), gap, nil
}

// noteWrite keeps a submitted write for the fold; it folds what has
// committed once too many are kept.
func (a *actor) noteWrite(p *events.Pending) {
	if a.state == nil {
		return // not seeded yet: the seed will read what p writes
	}
	a.unfolded = append(a.unfolded, p)
	if len(a.unfolded) > maxUnfolded {
		a.foldCommitted()
	}
}

// foldCommitted folds the events of the writes that have completed, in
// submission order (the writer completes them in that order). A failed
// write committed nothing; an event the seed already holds is skipped.
func (a *actor) foldCommitted() {
	n, fold := 0, a.fold
	for _, p := range a.unfolded {
		select {
		case <-p.Done():
		default:
			clear(a.unfolded[:n])
			a.unfolded = append(a.unfolded[:0], a.unfolded[n:]...)
			return
		}
		n++
		p.Committed(a.id, fold)
	}
	clear(a.unfolded)
	a.unfolded = a.unfolded[:0]
}

// fold evolves the actor's state by one committed event; one the seed
// already holds is skipped.
func (a *actor) fold(e session.Event) {
	if e.Seq <= a.state.Seq {
		return
	}
	if err := a.state.Evolve(e); err != nil {
		// The log and what the actor folded disagree: a bug. Say it,
		// and skip the event rather than stop.
		a.log.Error("the session's log does not fold", "err", err)
	}
}

// folded is the session's state once every write submitted so far has
// committed: the log as the actor's state stands.
//
// The first read seeds it from the rows, once every write submitted has
// committed, so the rows hold all of them: an actor loaded only to carry
// an agent's output (a re-attach after a restart) never pays for the seed.
func (a *actor) folded(ctx context.Context) (*session.State, error) {
	a.atCommit(ctx)
	if a.state != nil {
		a.foldCommitted()
		return a.state, nil
	}
	err := a.m.store.Snapshot(ctx, func(r *store.Store) error {
		sess, err := r.GetSession(ctx, a.id)
		if err != nil {
			return err
		}
		turns, err := r.ListTurns(ctx, a.id)
		if err != nil {
			return err
		}
		a.state, a.gap, err = seedState(ctx, r, a.m.history, sess, turns)
		return err
	})
	if err != nil {
		a.state = nil
		return nil, err
	}
	clear(a.unfolded)
	a.unfolded = a.unfolded[:0]
	return a.state, nil
}

// planInput is the recovery plan's input from the folded state, with what
// only the live actor knows.
func (a *actor) planInput(ctx context.Context) (session.PlanInput, error) {
	st, err := a.folded(ctx)
	if err != nil {
		return session.PlanInput{}, err
	}
	in := st.PlanInput()
	_, _, specErr := a.m.profiles.Spec(a.sess.AgentProfileID)
	in.Closing, in.AgentAvailable, in.Gap = a.stopping, specErr == nil, a.gap
	return in, nil
}
