package cli_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/client"
)

var search10k sharedDaemon

// Each seeded session has searchTurns turns of searchMessages messages
// (a prompt and the agent's replies): 10,000 sessions × 100 messages.
const (
	searchTurns    = 10
	searchMessages = 10
)

// seedTranscripts writes the transcripts of the sessions seedSessions
// made straight into the database (one transaction; the daemon is not
// running): each turn ended, its messages, and the search document its
// ends would have appended (as migrations/00021_session_titles.sql
// builds it). Every message holds common words, and each session one
// word of its own ("zq" and its number in base 36), so a query can match
// every session, some, or one.
func seedTranscripts(b *testing.B, d *daemon) {
	b.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(d.dir, "tether.db")+"?_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.Query(`SELECT id FROM sessions ORDER BY created_at`)
	if err != nil {
		b.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	turn, err := tx.Prepare(`INSERT INTO turns (session_id, prompt_id, seq, kind, state, created_at, started_at, ended_at)
		VALUES (?, ?, ?, 'prompt', 'completed', ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	msg, err := tx.Prepare(`INSERT INTO messages (session_id, prompt_id, role, text, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339Nano)
	for i, id := range ids {
		own := "zq" + fmt.Sprint(i)
		for t := range searchTurns {
			pid := fmt.Sprintf("seed-%d", t)
			if _, err := turn.Exec(id, pid, t+1, at, at, at); err != nil {
				b.Fatal(err)
			}
			for m := range searchMessages {
				role, text := "agent", fmt.Sprintf("step %d of turn %d: the pipeline ran the parser tests and the linter, all green; %s", m, t, own)
				if m == 0 {
					role, text = "user", fmt.Sprintf("please check the pipeline again, turn %d", t)
				}
				if _, err := msg.Exec(id, pid, role, text, at, at); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if _, err := tx.Exec(`INSERT INTO session_search (docid, session_id, body)
		SELECT s.rowid, s.id, group_concat(m.text, ' ') FROM sessions s JOIN messages m ON m.session_id = s.id GROUP BY s.rowid, s.id`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSearch10k times GET /sessions?q= end to end (HTTP, the real
// daemon, SQLite) on 10,000 sessions of 100 messages each, per kind of
// query, and reports the median (p50-ms) and the 90th percentile.
func BenchmarkSearch10k(b *testing.B) {
	d := search10k.get(b, func(b *testing.B, d *daemon) string {
		seedSessions(b, d, nSeeded)
		seedTranscripts(b, d)
		d.start(b)
		return ""
	})
	for _, bc := range []struct {
		name, q string
		want    int // sessions on the first page
	}{
		{"one session's own word", "zq4242", 1},
		{"a word of every session", "pipeline", 50},
		{"two words of every session", "parser linter", 50},
		{"a prefix of every session", "pipel", 50},
		{"a title", "seeded session 4242", 1},
		{"a word of none", "kumquat", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := "/sessions?q=" + url.QueryEscape(bc.q) + "&archived=false"
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				var list client.SessionList
				d.get(b, path, &list)
				took = append(took, time.Since(start))
				if len(list.Sessions) != bc.want {
					b.Fatalf("q=%q: got %d sessions, want %d", bc.q, len(list.Sessions), bc.want)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(took[len(took)*9/10])/1e6, "p90-ms")
		})
	}
}
