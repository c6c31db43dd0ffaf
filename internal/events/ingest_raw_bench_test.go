package events_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// rawBatch is the writer's default batch (WriterConfig.MaxBatch) and
// rawRows the rows of its largest INSERT (store.AppendEvents): the
// baseline commits the same transactions of the same statements.
const (
	rawBatch = 512
	rawRows  = 256
)

// benchRawInsert is BenchmarkIngest's baseline: the rows the writer
// stores for b.N message.chunk events (same columns, same payload JSON,
// ids and seqs assigned the same way), inserted with database/sql alone —
// multi-row INSERTs of the store's shape prepared once, rawBatch rows a
// transaction — into a database the store created, then closed, opened
// with the store's pragmas (WAL, synchronous=NORMAL, immediate
// transactions). No hub, no subscribers, no op callbacks, no
// checkpointer beside it: what SQLite itself costs for this ingest. With
// autoCheckpoint (SQLite's default) the commit that takes the WAL past
// 1,000 pages checkpoints it; without, nothing checkpoints during the run
// (the pure insert cost).
func benchRawInsert(b *testing.B, autoCheckpoint bool) {
	l := openBenchLog(b, ingestSessions)
	// The raw connection is the only one: no writer, and no store (whose
	// checkpointer would work beside it).
	l.w.Close()
	if err := l.st.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite3", rawDSN(l.path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if !autoCheckpoint {
		if _, err := db.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
			b.Fatal(err)
		}
	}
	many, err := db.PrepareContext(ctx, rawInsertSQL(rawRows))
	if err != nil {
		b.Fatal(err)
	}
	one, err := db.PrepareContext(ctx, rawInsertSQL(1))
	if err != nil {
		b.Fatal(err)
	}
	payloads := make([][]byte, ingestSessions)
	sids, pids := make([][]byte, ingestSessions), make([][]byte, ingestSessions)
	chunkType := []byte(events.MessageChunk)
	for si, sid := range l.sessions {
		sids[si], pids[si] = []byte(sid), []byte(promptID(si*1_000_000))
	}
	for si, sid := range l.sessions {
		p, err := json.Marshal(&session.MessageChunkData{EventCommon: session.EventCommon{SessionID: sid, TaskID: l.taskID, PromptID: promptID(si * 1_000_000)},
			MessageID: 42, Role: session.RoleAgent, Text: chunkText})
		if err != nil {
			b.Fatal(err)
		}
		payloads[si] = p
	}
	seqs := make([]int64, ingestSessions)
	args := make([]any, 0, 1+rawRows*7)
	var id int64
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM events").Scan(&id); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuClock(b)
	for done := 0; done < b.N; {
		n := min(rawBatch, b.N-done)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		for left := n; left > 0; {
			rows, stmt := 1, one
			if left >= rawRows {
				rows, stmt = rawRows, many
			}
			// The writer's binding (store.AppendEvents): one created_at a
			// statement, text as bytes cast back to TEXT.
			args = append(args[:0], []byte(time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")))
			for range rows {
				si := int(id) % ingestSessions
				id++
				seqs[si]++
				args = append(args, id, sids[si], seqs[si], chunkType, pids[si], 0, payloads[si], nil)
			}
			if _, err := tx.Stmt(stmt).ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
			left -= rows
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.StopTimer()
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// rawDSN opens path with the pragmas store.Open sets.
func rawDSN(path string) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
}

// rawInsertSQL is an n-row INSERT into the events table: the store's own.
func rawInsertSQL(n int) string { return store.EventInsertSQL(n) }
