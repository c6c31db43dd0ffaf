package sessions

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/jsonscan"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Admission: a prompt reaches an agent only after the daemon has durably
// admitted it (its turn row and turn.queued committed), and a prompt whose
// admission fails leaves nothing behind, in memory or on disk.

// DefaultPromptMaxDepth is the default bound on how deeply a prompt's JSON
// may nest, counting the array of content blocks as level 1. Real content
// blocks need a handful of levels; the rest of the budget is for _meta.
const DefaultPromptMaxDepth = 64

// MaxPromptDepth is the largest PromptMaxDepth the store can honour: SQLite's
// JSON functions (which the schema's json_valid checks use) refuse documents
// nested more than 1000 levels deep, and the turn.queued event wraps the
// prompt in a payload object.
const MaxPromptDepth = 900

// checkPrompt refuses, as a client mistake, a prompt the store or an agent
// could not take. The contract already bounds blocks and text length; this
// checks what a schema cannot express.
func (m *Manager) checkPrompt(prompt json.RawMessage) error {
	if d := jsonscan.Depth(prompt); d > m.cfg.PromptMaxDepth {
		return errcode.New(errcode.ValidationFailed, "prompt nests %d levels deep; at most %d are allowed", d, m.cfg.PromptMaxDepth).
			With("maxDepth", m.cfg.PromptMaxDepth)
	}
	return nil
}

// unsupportedBlock is the first block type of prompt that the agent said
// in initialize it does not take (ACP promptCapabilities: image, audio,
// embedded resource), or "" when all are allowed. It asks the running
// agent, else what the profile last advertised; an agent never started
// and never probed is not second-guessed.
func (a *actor) unsupportedBlock(prompt json.RawMessage) string {
	var caps acp.Capabilities
	switch {
	case a.conn != nil:
		caps = a.conn.Capabilities()
	default:
		_, p, err := a.m.profiles.Spec(a.sess.AgentProfileID)
		if err != nil || p.Capabilities == nil {
			return ""
		}
		caps = *p.Capabilities
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(prompt, &blocks) != nil {
		return ""
	}
	for _, b := range blocks {
		if (b.Type == "image" && !caps.Image) || (b.Type == "audio" && !caps.Audio) || (b.Type == "resource" && !caps.EmbeddedContext) {
			return b.Type
		}
	}
	return ""
}

// queuedDraft is turn.queued of turn t of sess, the event that admits it:
// its projection creates the turn's row (numbering it) and marks the
// session prompted, so the row and the event exist together or not at all.
func queuedDraft(sess session.Session, t session.Turn) events.Draft {
	return sessionDraft(sess.ID, sess.TaskID, t.PromptID, &session.TurnQueuedData{
		Kind: t.Kind, Prompt: t.Prompt, ContinuesPromptID: t.ContinuesPromptID, Interruption: t.Interruption})
}

// admission is a turn whose admitting write has not reported yet.
type admission struct {
	// prevLast is lastPromptID before this turn was admitted, restored
	// should the write fail.
	prevLast string
	// pending is the admitting write.
	pending *events.Pending
	// released: this admission released a queue held since a restart,
	// which is held again should the write fail.
	released bool
}

// admissionWrite is the pending write admitting promptID.
func (a *actor) admissionWrite(promptID string) *events.Pending {
	return a.admitting[promptID].pending
}

// awaitAdmission reports the outcome of a turn's admitting write back to
// the actor. The goroutine ends when the write does: the writer answers
// every op it accepted, even while closing.
func (a *actor) awaitAdmission(promptID string, pending *events.Pending) {
	a.m.spawn(func() {
		evs, err := pending.Wait(context.Background())
		a.mb.Post(func() { a.admitted(promptID, evs, err) })
	})
}

// settled settles t's admission, whose write has succeeded with events
// evs, on the actor (which may already have done so) and returns the turn
// as it now stands, so the answer says whether it started at once.
func (a *actor) settled(ctx context.Context, t session.Turn, evs []store.Event) session.Turn {
	now, err := mailbox.Call(ctx, a.mb, func() (session.Turn, error) {
		a.admitted(t.PromptID, evs, nil)
		return a.turns[t.PromptID], nil
	})
	if err != nil || now.PromptID == "" {
		return t
	}
	return now
}

// admitted takes the outcome of a turn's admitting write, once: the turn
// is durable, with the seq the log numbered it with, or its write failed
// whole and it is forgotten, in memory as on disk, as if never asked
// (unadmit). Either is what the write did, not a decision; what follows
// from it is (decideAdmitted). Settling twice is a no-op, so the waiting
// request may settle it first (and answer with what it did).
func (a *actor) admitted(promptID string, evs []store.Event, err error) {
	adm, ok := a.admitting[promptID]
	if !ok {
		return
	}
	delete(a.admitting, promptID)
	if err != nil {
		a.unadmit(promptID, adm, err)
	} else {
		a.learnSeq(promptID, queuedSeq(promptID, evs))
	}
	_ = a.perform(decide(a.view(), admittedInput{PromptID: promptID}), nil)
}

// queuedSeq is the seq the store numbered turn promptID with, which the
// turn.queued among evs that admitted it carries (0: none there).
func queuedSeq(promptID string, evs []store.Event) int64 {
	var seq int64
	for _, e := range evs {
		var d session.TurnQueuedData
		if e.Type == events.TurnQueued && e.PromptID == promptID && json.Unmarshal(e.Payload, &d) == nil {
			seq = d.Seq
		}
	}
	return seq
}

// learnSeq gives turn promptID, admitted durably, the seq the store
// numbered it with: the actor's turns keep the log's order (turnsBySeq)
// without reading the store back.
func (a *actor) learnSeq(promptID string, seq int64) {
	if seq == 0 {
		return
	}
	if t, ok := a.turns[promptID]; ok {
		t.Seq = seq
		a.turns[promptID] = t
	}
	for i := range a.queue {
		if a.queue[i].PromptID == promptID {
			a.queue[i].Seq = seq
		}
	}
}

// unadmit forgets turn promptID, whose admitting write (adm) failed
// with err, in memory as on disk: the agent never hears of it. A queue
// hold the write released is held again, as the log still has it.
func (a *actor) unadmit(promptID string, adm admission, err error) {
	a.log.Warn("prompt not admitted: its turn could not be stored", "promptId", promptID, "err", err)
	delete(a.turns, promptID)
	a.queue = slices.DeleteFunc(a.queue, func(t session.Turn) bool { return t.PromptID == promptID })
	if adm.released {
		a.sess.QueueHeld = true
	}
	if a.lastPromptID == promptID {
		a.lastPromptID = adm.prevLast
	}
	for id, other := range a.admitting {
		if other.prevLast == promptID {
			other.prevLast = adm.prevLast
			a.admitting[id] = other
		}
	}
	// Only admissions mark a session prompted, and turns are never deleted.
	a.sess.Prompted = len(a.turns) > 0
}
