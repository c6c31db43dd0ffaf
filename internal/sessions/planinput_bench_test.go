package sessions

import (
	"context"
	"fmt"
	"testing"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// seedTranscript records messages/2 turns (a user message and an agent
// reply each, one tool call), the last one interrupted, in one
// transaction, on a real SQLite file.
func seedTranscript(b *testing.B, messages int) *planStore {
	b.Helper()
	p := openPlanStore(b)
	ctx := context.Background()
	if err := p.st.Tx(ctx, func(tx *store.Store) error {
		q := &planStore{st: tx, sid: p.sid, t0: p.t0}
		for i := 1; i < messages/2; i++ {
			q.turn(b, fmt.Sprintf("h%d", i), session.TurnCompleted, i, nil)
		}
		q.turn(b, "last", session.TurnInterrupted, messages, interrupted("agent_exited"))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkRecoveryPlan measures a recovery plan at growing transcript
// lengths, before (the whole transcript read) and after (the bounded
// reads): "push" is the writer's hold for one recovery push (a write
// transaction planning inside it, as at every turn boundary), "plan" the
// snapshot read and plan of /context and of each /continue attempt;
// "push/…/empty" is the floor, a write transaction with nothing in it.
func BenchmarkRecoveryPlan(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 1000, 6000, 10000} {
		p := seedTranscript(b, n)
		h := newHistoryChecks()
		reads := map[string]func(r *store.Store) session.PlanInput{
			"before": func(r *store.Store) session.PlanInput { return fullPlanInput(b, r, p.sid) },
			"after": func(r *store.Store) session.PlanInput {
				in, err := readPlanInput(ctx, r, p.sid, h)
				if err != nil {
					b.Fatal(err)
				}
				return in
			},
		}
		// The floor: the same write transaction with no plan in it.
		b.Run(fmt.Sprintf("push/messages=%d/empty", n), func(b *testing.B) {
			for range b.N {
				if err := p.st.Tx(ctx, func(*store.Store) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, version := range []string{"before", "after"} {
			read := reads[version]
			b.Run(fmt.Sprintf("push/messages=%d/%s", n, version), func(b *testing.B) {
				for range b.N {
					if err := p.st.Tx(ctx, func(tx *store.Store) error {
						var emitted []events.Draft
						emitted = append(emitted, events.Draft{SessionID: p.sid, Type: events.SessionRecoveryChanged,
							Payload: map[string]any{"recovery": session.Plan(read(tx))}})
						_ = emitted
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("plan/messages=%d/%s", n, version), func(b *testing.B) {
				for range b.N {
					if err := p.st.Snapshot(ctx, func(r *store.Store) error {
						_ = session.Plan(read(r))
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
