package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestBackupWhileDaemonWrites takes backups with `tetherd backup` while the
// daemon runs turns, checks each copy (mode 0600, integrity, everything
// committed before it began present, per-session seqs gapless), refuses to
// overwrite without --force, then restores one into a fresh data dir and
// starts a daemon on it: the sessions are there with new epochs, so a
// cursor from before the restore gets resync_required.
func TestBackupWhileDaemonWrites(t *testing.T) {
	bin, dir, addr := binary(t), t.TempDir(), freeAddr(t)
	cmd, _ := start(t, bin, dir, addr)
	c := client(t, dir, addr)

	type before struct {
		sid, epoch, cursor string
		head               int64
	}
	var committed []before
	for i := range 3 {
		sid := c.session()
		c.waitTurn(sid, c.prompt(sid, fmt.Sprintf("/stream %d", 10+i)))
		tr := c.object("GET", "/session/"+sid+"/transcript", nil, http.StatusOK)
		cur := tr["cursor"].(string)
		var head int64
		fmt.Sscanf(cur[strings.IndexByte(cur, ':')+1:], "%d", &head)
		committed = append(committed, before{sid: sid, epoch: tr["eventEpoch"].(string), cursor: cur, head: head})
	}

	// Writes go on while the backups run: streamed turns on two sessions.
	busy := []string{c.session(), c.session()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(busy))
	for _, sid := range busy {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.tryTurn(sid, "/stream 200"); err != nil {
					errs <- fmt.Errorf("turn during backup: %w", err)
					return
				}
			}
		}()
	}
	out := filepath.Join(t.TempDir(), "backup")
	backups := []string{out + "-1.db", out + "-2.db", out + "-3.db"}
	for _, b := range backups {
		if res, err := exec.Command(bin, "backup", "--data-dir", dir, b).CombinedOutput(); err != nil {
			t.Fatalf("tetherd backup: %v\n%s", err, res)
		} else if !strings.Contains(string(res), "integrity ok") {
			t.Errorf("backup output %q does not report the integrity check", res)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for _, b := range backups {
		fi, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: got mode %04o, want 0600", b, fi.Mode().Perm())
		}
		checkBackup(t, b, func(db *sql.DB) {
			var evs int64
			_ = db.QueryRow(`SELECT count(*) FROM events`).Scan(&evs)
			t.Logf("%s: %d events", filepath.Base(b), evs)
			for _, s := range committed {
				var n int64
				if err := db.QueryRow(`SELECT count(*) FROM events WHERE session_id = ? AND seq <= ?`, s.sid, s.head).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != s.head {
					t.Errorf("%s: session %s has %d of the %d events committed before the backup", b, s.sid, n, s.head)
				}
			}
		})
	}

	// An existing output is refused, and replaced with --force.
	res, err := exec.Command(bin, "backup", "--data-dir", dir, backups[0]).CombinedOutput()
	if err == nil || !strings.Contains(string(res), "already exists") {
		t.Errorf("backup onto an existing file: got %v %q, want a refusal naming --force", err, res)
	}
	if res, err := exec.Command(bin, "backup", "--data-dir", dir, "--force", backups[0]).CombinedOutput(); err != nil {
		t.Errorf("backup --force: %v\n%s", err, res)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()

	// Restore: the backup becomes tether.db of a fresh data dir.
	restored := t.TempDir()
	data, err := os.ReadFile(backups[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "tether.db"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr2 := freeAddr(t)
	d2, logs := start(t, bin, restored, addr2)
	if !strings.Contains(logs.String(), "restored from a backup") {
		t.Errorf("start-up log does not say the database was restored:\n%s", logs.String())
	}
	c2 := client(t, restored, addr2)
	for _, s := range committed {
		tr := c2.object("GET", "/session/"+s.sid+"/transcript", nil, http.StatusOK)
		if tr["eventEpoch"] == s.epoch {
			t.Errorf("session %s kept epoch %s after a restore, want a new one", s.sid, s.epoch)
		}
		status, body := c2.do("GET", "/session/"+s.sid+"/events?follow=false&cursor="+s.cursor, nil)
		if status != http.StatusOK || !strings.Contains(string(body), "event: resync_required") || !strings.Contains(string(body), "epoch_mismatch") {
			t.Errorf("old cursor %s after restore: got %d %.300s, want resync_required epoch_mismatch", s.cursor, status, body)
		}
	}
	// The epochs change once, at the first start on the restored file.
	epoch := c2.object("GET", "/session/"+committed[0].sid+"/transcript", nil, http.StatusOK)["eventEpoch"]
	_ = d2.Process.Signal(syscall.SIGTERM)
	_ = d2.Wait()
	addr3 := freeAddr(t)
	start(t, bin, restored, addr3)
	if again := client(t, restored, addr3).object("GET", "/session/"+committed[0].sid+"/transcript", nil, http.StatusOK)["eventEpoch"]; again != epoch {
		t.Errorf("epoch changed on a plain restart of the restored daemon: %v, then %v", epoch, again)
	}
}

// checkBackup opens a backup read-only, checks that it is a sound SQLite
// database whose sessions have gapless event numbers, and hands it to more.
func checkBackup(t *testing.T, path string, more func(*sql.DB)) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var check string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("%s: integrity_check: %q %v", path, check, err)
	}
	var fkProblems int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fkProblems); err != nil || fkProblems != 0 {
		t.Errorf("%s: foreign_key_check: %d problems %v", path, fkProblems, err)
	}
	var gaps int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT session_id FROM events WHERE session_id IS NOT NULL AND session_id != ''
		GROUP BY session_id HAVING count(*) != max(seq))`).Scan(&gaps); err != nil || gaps != 0 {
		t.Errorf("%s: %d sessions with holes in their event numbers (%v)", path, gaps, err)
	}
	more(db)
}
