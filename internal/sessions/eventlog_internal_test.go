package sessions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// refusingLog is a fake EventLog in front of the real one: it refuses
// every change that would record an event of type typ for prompt, as a
// database that cannot take it would, and keeps what it refused. Where
// storetest.Fault refuses by table, this refuses one event of one turn.
type refusingLog struct {
	next        EventLog
	typ, prompt string
	mu          sync.Mutex
	hit         bool
}

// errRefusedByFake is the fake log's refusal, a store failure to the
// writer (it becomes store_write_failed).
var errRefusedByFake = errors.New("refused by the fake event log")

func (l *refusingLog) SubmitUnder(gen int64, c events.Change) *events.Pending {
	return l.next.SubmitUnder(gen, refusing{c, l})
}

func (l *refusingLog) SubmitContext(ctx context.Context, c events.Change) *events.Pending {
	return l.next.SubmitContext(ctx, refusing{c, l})
}

func (l *refusingLog) Do(ctx context.Context, apply events.Apply) ([]store.Event, error) {
	return l.next.SubmitContext(ctx, refusing{events.Func("", apply), l}).Wait(ctx)
}

// refused reports whether the log refused a change.
func (l *refusingLog) refused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hit
}

// refusing is a change the fake log looks into as the writer applies it.
// It decides from the change's own drafts only, so a redo (the writer
// redoes a failed batch's changes one by one) decides the same.
type refusing struct {
	events.Change
	l *refusingLog
}

func (c refusing) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	refuse := false
	err := c.Change.Apply(ctx, tx, func(d events.Draft) {
		if d.Type == c.l.typ && d.PromptID == c.l.prompt {
			refuse = true
		}
		emit(d)
	})
	if err != nil || !refuse {
		return err
	}
	c.l.mu.Lock()
	c.l.hit = true
	c.l.mu.Unlock()
	return errRefusedByFake // the writer rolls back what the change wrote
}

// TestActorOnAFakeEventLog runs a session on a fake event log that
// refuses one prompt's turn.queued: the prompt is answered
// store_write_failed, its agent never sees it (a turn is run only once
// the log has it), the store never has the turn, and the session takes
// the next prompt as if the refused one had never been asked.
func TestActorOnAFakeEventLog(t *testing.T) {
	ctx := context.Background()
	r := newFakeRig(t)
	log := &refusingLog{next: r.w, typ: events.TurnQueued, prompt: "refused"}
	r.mgr.Shutdown(ctx)
	r.mgr = New(r.st, log, fakeProfiles{}, Config{Runtime: r.rt, Logger: slog.New(slog.DiscardHandler)})
	s := r.readySession(t)

	_, err := r.mgr.Prompt(ctx, s.sess.ID, PromptInput{PromptID: "refused", Prompt: textPrompt("refused prompt")})
	if !errcode.Is(err, errcode.StoreWriteFailed) || !errors.Is(err, errRefusedByFake) {
		t.Fatalf("prompt the log refuses: got %v, want %s wrapping the fake's refusal", err, errcode.StoreWriteFailed)
	}
	if !log.refused() {
		t.Fatalf("the fake log refused no %s", events.TurnQueued)
	}

	if _, err := r.mgr.Prompt(ctx, s.sess.ID, PromptInput{PromptID: "taken", Prompt: textPrompt("taken prompt")}); err != nil {
		t.Fatalf("prompt after the refusal: %v", err)
	}
	p := s.agent.prompt(t)
	if got := string(p.prompt); !strings.Contains(got, "taken prompt") {
		t.Fatalf("the agent's first prompt: got %s, want the taken one (the refused turn never runs)", got)
	}
	p.answer("end_turn")
	s.waitEvent(t, events.TurnCompleted)

	if got := s.turn(t, "taken"); got.PromptID != "taken" {
		t.Errorf("taken turn: got %+v, want it stored", got)
	}
	if _, err := r.st.GetTurn(ctx, s.sess.ID, "refused"); !errcode.Is(err, errcode.TurnNotFound) {
		t.Errorf("refused turn in the store: got %v, want %s", err, errcode.TurnNotFound)
	}
}
