package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// HistoryEventsPerTurn is how many events each turn of HistoryFixture
// leaves in the log: turn.queued, turn.started, two message.added,
// five message.chunk and turn.completed, as a short streamed answer.
const HistoryEventsPerTurn = 10

// HistoryFixture writes a session at rest (waiting for input, its agent
// stopped) with turns completed turns, each a user message, an agent
// message and HistoryEventsPerTurn events, as a long session leaves them
// (issue 36's long histories), and returns its id. The events' payloads
// carry ids only: a read of the log's bounds or of its rows never parses
// them.
func HistoryFixture(st *store.Store, turns int) (string, error) {
	ctx := context.Background()
	var sid string
	err := st.Tx(ctx, func(tx *store.Store) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "history", Workspace: "/"})
		if err != nil {
			return err
		}
		s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/",
			State: session.SessionWaitingForInput, EventEpoch: store.NewEpoch()},
			session.Executor{Runtime: session.RuntimeStandalone, Status: session.ExecutorStopped})
		if err != nil {
			return err
		}
		sid = s.ID
		maxID, err := tx.MaxEventID(ctx)
		if err != nil {
			return err
		}
		evs := make([]store.Event, 0, 1000)
		seq := int64(0)
		for i := range turns {
			t, err := tx.CreateTurn(ctx, session.Turn{SessionID: sid, PromptID: fmt.Sprintf("p%d", i+1), Kind: session.TurnPrompt,
				Prompt: json.RawMessage(`[{"type":"text","text":"go on"}]`)})
			if err != nil {
				return err
			}
			at := time.Now().UTC()
			if err := tx.StartTurn(ctx, sid, t.PromptID, at, false); err != nil {
				return err
			}
			for _, m := range []session.Message{{Role: session.RoleUser, Text: "go on"}, {Role: session.RoleAgent, Text: "done, step " + fmt.Sprint(i+1)}} {
				m.SessionID, m.PromptID = sid, t.PromptID
				if _, err := tx.AddMessage(ctx, m); err != nil {
					return err
				}
			}
			t.State, t.StopReason, t.EndedAt = session.TurnCompleted, "end_turn", &at
			if err := tx.EndTurn(ctx, t); err != nil {
				return err
			}
			for k := range HistoryEventsPerTurn {
				seq++
				maxID++
				typ := "message.chunk"
				switch k {
				case 0:
					typ = "turn.queued"
				case 1:
					typ = "turn.started"
				case 2, 3:
					typ = "message.added"
				case HistoryEventsPerTurn - 1:
					typ = "turn.completed"
				}
				evs = append(evs, store.Event{ID: maxID, SessionID: sid, Seq: seq, Type: typ, PromptID: t.PromptID,
					Payload: json.RawMessage(`{"sessionId":"` + sid + `","promptId":"` + t.PromptID + `"}`), Time: at})
				if len(evs) == cap(evs) {
					if err := tx.AppendEvents(ctx, evs); err != nil {
						return err
					}
					evs = evs[:0]
				}
			}
		}
		if len(evs) > 0 {
			return tx.AppendEvents(ctx, evs)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("history fixture: %w", err)
	}
	return sid, nil
}
