package events_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/internal/testbin"
)

// TestWriterConnectionCutMidTransaction: the connection to PostgreSQL
// drops at a chosen statement of a batch's transaction. Whether the
// transaction made it or not, once the database is back the batch is
// stored exactly once, numbered without a hole, and its submitter is told
// it is stored. A cut as the COMMIT is sent is the ambiguous case: the
// server commits, the writer hears only the connection close (seen in
// test/cluster TestDatabaseOutage as 49 chunks stored twice).
func TestWriterConnectionCutMidTransaction(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("a commit in doubt is PostgreSQL's: SQLite's file is local, its commit answers or fails")
	}
	cases := []struct {
		name string
		// at is what the writer sends just before the cut; silent
		// leaves the server's side open (a partition, not a reset).
		at     string
		silent bool
	}{
		{"cut as the COMMIT is sent: it committed", "commit\x00", false},
		{"cut as the events are inserted: it did not", "cut-at-insert", false},
		{"partition as the COMMIT is sent: it committed", "commit\x00", true},
		// The server holds the transaction open, knowing nothing of the
		// loss: the writer ends it, then writes the batch again.
		{"partition as the events are inserted: left running, it is ended", "cut-at-insert", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			u, err := url.Parse(testbin.FreshPostgres(t))
			if err != nil {
				t.Fatal(err)
			}
			proxy := testbin.NewProxy(t, u.Host)
			u.Host = proxy.Addr()
			// The store's default ends a transaction left idle after 5 s;
			// off, a first attempt left running would hold its retry up
			// for good, unless the writer ends it.
			q := u.Query()
			q.Set("idle_in_transaction_session_timeout", "0")
			u.RawQuery = q.Encode()
			st, err := store.OpenPostgres(ctx, u.String())
			if err != nil {
				t.Fatal(err)
			}
			l := newLog(t, st, 1)
			// First of the cleanups: a writer held up by the database
			// hears it gone, and closes.
			t.Cleanup(proxy.Cut)
			sid := l.sessions[0]
			chunk := func(text string) events.Apply {
				return func(tx *store.Store, emit events.Emit) error {
					for range 3 {
						emit(events.Draft{SessionID: sid, Type: events.MessageChunk, PromptID: "p",
							Payload: &eventOnlyChunk{session.MessageChunkData{EventCommon: session.EventCommon{TaskID: l.taskID}, Role: session.RoleAgent, Text: text}}})
					}
					return nil
				}
			}
			if _, err := l.w.Do(ctx, chunk("before")); err != nil {
				t.Fatalf("the first batch: %v", err)
			}

			cut := proxy.CutAfter([]byte(tc.at), tc.silent)
			p := l.w.Submit(chunk("cut-at-insert"))
			select {
			case <-cut:
			case <-time.After(30 * time.Second):
				t.Fatalf("the writer never sent %q", tc.at)
			}
			time.Sleep(300 * time.Millisecond) // the writer holds the batch meanwhile
			if !l.w.Unreachable() {
				t.Error("during the cut: the writer does not say the database is unreachable")
			}
			proxy.Restore()
			waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			evs, err := p.Wait(waitCtx)
			if err != nil || len(evs) != 3 {
				t.Fatalf("the batch cut: got %d events, %v; want 3, stored", len(evs), err)
			}
			if _, err := l.w.Do(ctx, chunk("after")); err != nil {
				t.Fatalf("the batch after: %v", err)
			}

			stored, err := st.ListSessionEvents(ctx, sid, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != 9 {
				t.Fatalf("stored: got %d events, want 9 (3 batches of 3, each once)", len(stored))
			}
			for i, e := range stored {
				if e.Seq != int64(i+1) {
					t.Fatalf("stored event %d: got seq %d, want %d", i, e.Seq, i+1)
				}
			}
			for i, e := range evs {
				if e.ID != stored[3+i].ID || e.Seq != stored[3+i].Seq {
					t.Errorf("the cut batch's event %d: told id %d seq %d, stored id %d seq %d", i, e.ID, e.Seq, stored[3+i].ID, stored[3+i].Seq)
				}
			}
		})
	}
}
