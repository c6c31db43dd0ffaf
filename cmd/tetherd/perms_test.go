package main_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDataDirFilesArePrivate checks that everything tetherd creates in its
// data dir (database, -wal, -shm, token, demo-agent state) is owner-only,
// and that looser modes found at start-up are tightened (database) or
// reported with the path and the fix (directory, token file).
func TestDataDirFilesArePrivate(t *testing.T) {
	bin, dir, addr := binary(t), filepath.Join(t.TempDir(), "data"), freeAddr(t)
	cmd, _ := start(t, bin, dir, addr)
	c := client(t, dir, addr)
	sid := c.session()
	c.waitTurn(sid, c.prompt(sid, "/stream 3"))

	// While the daemon runs, the WAL and shared-memory files exist.
	for _, name := range []string{"tether.db-wal", "tether.db-shm"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s: %v (want it to exist while the daemon runs)", name, err)
		}
	}
	assertPrivateTree(t, dir)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()

	loosen := []struct {
		path string
		mode fs.FileMode
	}{
		{dir, 0o755},
		{filepath.Join(dir, "token"), 0o644},
		{filepath.Join(dir, "tether.db"), 0o644},
	}
	for _, l := range loosen {
		if err := os.Chmod(l.path, l.mode); err != nil {
			t.Fatal(err)
		}
	}
	_, logs := start(t, bin, dir, freeAddr(t))
	wantLines := []struct {
		name  string
		parts []string
	}{
		{"data dir", []string{"data directory is accessible by other users", "path=" + dir, "mode=0755", `fix="chmod 700 ` + dir + `"`}},
		{"token", []string{"token file is readable or writable by other users", "path=" + filepath.Join(dir, "token"), "mode=0644", `fix="chmod 600 ` + filepath.Join(dir, "token") + `"`}},
	}
	out := logs.String()
	for _, w := range wantLines {
		if !hasLineWith(out, w.parts) {
			t.Errorf("%s: no start-up log line with %q in\n%s", w.name, w.parts, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "tether.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tether.db after restart: got %v (err %v), want 0600 again", fi.Mode().Perm(), err)
	}
}

// assertPrivateTree fails for any file under dir readable or writable by
// group or others, and any directory not 0700.
func assertPrivateTree(t *testing.T, dir string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && fi.Mode().Perm() != 0o700:
			t.Errorf("%s: got directory mode %04o, want 0700", p, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			files++
			if fi.Mode().Perm()&0o077 != 0 { // git's objects are 0400
				t.Errorf("%s: got file mode %04o, want 0600 or stricter", p, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 { // token, tether.db, -wal, -shm, the demo agent's session file
		t.Errorf("got %d files under %s, want at least 5 (is the demo agent's state there?)", files, dir)
	}
}

// hasLineWith reports whether one line of out contains every part.
func hasLineWith(out string, parts []string) bool {
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}
