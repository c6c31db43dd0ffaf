package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// BenchmarkSessionEventBounds (issue 36): a session's log bounds, read on
// every /context, /status and continue, with 100,000 events in the
// session (about 10,000 turns of a chatty agent) beside another session's
// 100,000. "one statement" is the query it replaced (MIN and MAX in one
// SELECT, which made SQLite walk the session's events), run in the same
// process as the baseline.
func BenchmarkSessionEventBounds(b *testing.B) {
	dir := b.TempDir()
	st := storetest.Open(b, dir)
	ctx := context.Background()
	var sids []string
	err := st.Tx(ctx, func(tx *store.Store) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "bounds", Workspace: "/"})
		if err != nil {
			return err
		}
		id := int64(0)
		for range 2 {
			s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/"}, session.Executor{})
			if err != nil {
				return err
			}
			sids = append(sids, s.ID)
			evs := make([]store.Event, 0, 1000)
			for seq := int64(1); seq <= 100_000; seq++ {
				id++
				evs = append(evs, store.Event{ID: id, SessionID: s.ID, Seq: seq, Type: "message.chunk", Payload: json.RawMessage(`{"text":"x"}`), Time: time.Now()})
				if len(evs) == cap(evs) {
					if err := tx.AppendEvents(ctx, evs); err != nil {
						return err
					}
					evs = evs[:0]
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("two seeks", func(b *testing.B) {
		for range b.N {
			if bd, err := st.SessionEventBounds(ctx, sids[0]); err != nil || bd.First != 1 || bd.Head != 100_000 {
				b.Fatalf("bounds %+v, %v", bd, err)
			}
		}
	})
	b.Run("one statement", func(b *testing.B) {
		db := storetest.DB(b, dir)
		q := storetest.Rebind(`SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?`)
		for range b.N {
			var first, head int64
			if err := db.QueryRow(q, sids[0]).Scan(&first, &head); err != nil || head != 100_000 {
				b.Fatalf("bounds %d-%d, %v", first, head, err)
			}
		}
	})
}
