package main_test

import (
	"context"
	"database/sql"
	"errors"
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

// TestBackupNamesUsersMistakes runs `tetherd backup` as a user gets it
// wrong: each mistake is refused with its stable code and a message that
// says what to do (never internal_error, which a script takes for a failed
// backup), writes nothing, and leaves the database alone, also when
// --force and a second name of the database would have deleted it.
func TestBackupNamesUsersMistakes(t *testing.T) {
	bin, dir, addr := binary(t), t.TempDir(), freeAddr(t)
	start(t, bin, dir, addr) // a live daemon, as a backup normally finds it
	db := filepath.Join(dir, "tether.db")
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}

	type setup struct{ data, out string } // a data dir, a free OUTPUT path
	cases := []struct {
		name string
		// args builds the command line; s has a fresh scratch directory.
		args func(t *testing.T, s setup) []string
		// code is the stable code in "tetherd: CODE: …"; "" wants success.
		code string
		msg  string // a part of the message (or, on success, of stdout)
		// exit is the status wanted: 1 for a refusal, 2 for a usage error.
		exit int
	}{
		{"output exists", func(t *testing.T, s setup) []string {
			write(t, s.out, "keep me")
			return []string{"--data-dir", dir, s.out}
		}, "backup_output_exists", "pass --force to replace it", 1},
		{"output is a directory", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, "--force", filepath.Dir(s.out)}
		}, "backup_output_invalid", "is a directory", 1},
		{"output's directory does not exist", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, filepath.Join(s.out, "x.db")}
		}, "backup_output_invalid", "does not exist", 1},
		{"output is the database", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, "--force", db}
		}, "backup_output_invalid", "the database's own file", 1},
		{"output is the database's -wal file", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, "--force", db + "-wal"}
		}, "backup_output_invalid", "the database's own file", 1},
		{"output is the database through a symlinked directory, with --force", func(t *testing.T, s setup) []string {
			link := filepath.Join(filepath.Dir(s.out), "link")
			if err := os.Symlink(dir, link); err != nil {
				t.Fatal(err)
			}
			return []string{"--data-dir", dir, "--force", filepath.Join(link, "tether.db")}
		}, "backup_output_invalid", "under another name", 1},
		{"no database in the data dir", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", s.data, s.out}
		}, "database_not_found", "is --data-dir (or TETHER_DATA_DIR) the daemon's data directory?", 1},
		{"data dir does not exist", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", filepath.Join(s.data, "nope"), s.out}
		}, "database_not_found", "no such file or directory", 1},
		{"data dir is a file", func(t *testing.T, s setup) []string {
			write(t, filepath.Join(s.data, "file"), "x")
			return []string{"--data-dir", filepath.Join(s.data, "file"), s.out}
		}, "database_not_found", "not a directory", 1},
		{"data dir from TETHER_DATA_DIR without a database", func(t *testing.T, s setup) []string {
			t.Setenv("TETHER_DATA_DIR", s.data)
			return []string{s.out}
		}, "database_not_found", "no database at {data}/tether.db", 1},
		{"tether.db is not a database", func(t *testing.T, s setup) []string {
			write(t, filepath.Join(s.data, "tether.db"), "these are my notes, not a database\n")
			return []string{"--data-dir", s.data, s.out}
		}, "not_a_database", "is not an SQLite database", 1},
		{"no OUTPUT", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir}
		}, "usage_error", "want exactly one OUTPUT file, got 0", 2},
		{"two OUTPUTs", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, s.out, s.out + "2"}
		}, "usage_error", "want exactly one OUTPUT file, got 2", 2},
		{"unknown flag", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, "--overwrite", s.out}
		}, "usage_error", "flag provided but not defined: -overwrite", 2},
		{"--help", func(t *testing.T, s setup) []string {
			return []string{"--help"}
		}, "", "backup_output_exists   OUTPUT exists (--force replaces it)", 0},
		{"a backup after all that", func(t *testing.T, s setup) []string {
			return []string{"--data-dir", dir, s.out}
		}, "", "integrity ok", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scratch := t.TempDir()
			s := setup{data: filepath.Join(scratch, "data"), out: filepath.Join(scratch, "out", "backup.db")}
			for _, d := range []string{s.data, filepath.Dir(s.out)} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			args := tc.args(t, s)
			existed := map[string]bool{}
			for _, p := range []string{s.out, s.out + "2"} {
				_, err := os.Lstat(p)
				existed[p] = err == nil
			}
			var stdout, stderr strings.Builder
			cmd := exec.Command(bin, append([]string{"backup"}, args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			exit := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if exit != tc.exit {
				t.Errorf("got exit status %d, want %d\nstdout: %s\nstderr: %s", exit, tc.exit, stdout.String(), stderr.String())
			}
			msg := strings.ReplaceAll(tc.msg, "{data}", s.data)
			if tc.code == "" {
				if !strings.Contains(stdout.String(), msg) {
					t.Errorf("got stdout %q, want it to contain %q (stderr %q)", stdout.String(), msg, stderr.String())
				}
				return
			}
			// The first line says it; a usage error's next points at the help.
			got, _, _ := strings.Cut(stderr.String(), "\n")
			if want := "tetherd: " + tc.code + ": "; !strings.HasPrefix(got, want) {
				t.Errorf("got stderr %q, want a first line starting %q", stderr.String(), want)
			}
			if !strings.Contains(got, msg) {
				t.Errorf("got stderr %q, want it to contain %q", got, msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("got stdout %q from a refusal, want none", stdout.String())
			}
			for p, was := range existed {
				if _, err := os.Lstat(p); err == nil && !was {
					t.Errorf("a refused backup created %s", p)
				}
			}
			if b, err := os.ReadFile(s.out); existed[s.out] && (err != nil || string(b) != "keep me") {
				t.Errorf("a refused backup changed the existing %s: got %q %v", s.out, b, err)
			}
		})
	}
	// The database was never a backup's output: the daemon's file is still
	// there, the same file (--force would have removed it and made another).
	after, err := os.Stat(db)
	if err != nil {
		t.Fatalf("the database is gone: %v", err)
	}
	if !os.SameFile(before, after) || after.Size() == 0 {
		t.Errorf("the database was replaced: got %v (%d bytes), want the file the daemon opened", after.ModTime(), after.Size())
	}
}

// write makes a file with content, failing t if it cannot.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
