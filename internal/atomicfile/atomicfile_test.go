package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tether/tether/internal/atomicfile"
)

func TestWrite(t *testing.T) {
	cases := []struct {
		name string
		old  string // "" when the file does not exist yet
		data string
	}{
		{name: "creates", data: "first"},
		{name: "replaces", old: "a longer old content", data: "new"},
		{name: "empty", old: "x", data: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.Write(path, []byte(tc.data)); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tc.data {
				t.Fatalf("got %q, %v; want %q", got, err, tc.data)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("got mode %o, want 600", fi.Mode().Perm())
			}
			if _, err := os.Stat(path + atomicfile.TempSuffix); !os.IsNotExist(err) {
				t.Fatalf("temporary file left behind: %v", err)
			}
		})
	}
}

func TestWriteFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file goes makes the write fail.
	if err := os.Mkdir(path+atomicfile.TempSuffix, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("new")); err == nil {
		t.Fatal("Write over a blocked temporary name: got nil, want an error")
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("after a failed Write: got %q, want the old content", got)
	}
}
