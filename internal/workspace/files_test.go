package workspace_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/workspace"
)

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func openRoot(t *testing.T, dir string, lim workspace.FileLimits) *workspace.Root {
	t.Helper()
	r, err := workspace.OpenRoot(dir, lim)
	if err != nil {
		t.Fatalf("OpenRoot(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// kindOf is the FileError kind of err, "" for nil and "other" for an error
// that is not a FileError.
func kindOf(err error) workspace.FileErrorKind {
	if err == nil {
		return ""
	}
	var fe *workspace.FileError
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return "other"
}

// tree is a workspace ws beside a directory outside it, in one temp dir.
type tree struct{ base, ws, outside string }

func newTree(t *testing.T) tree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := tree{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mustWrite(t, filepath.Join(tr.ws, "README.md"), "inside\n")
	mustWrite(t, filepath.Join(tr.outside, "secret.txt"), "secret\n")
	return tr
}

func TestReadConfinement(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, filepath.Join(tr.ws, "sub", "notes.txt"), "notes\n")
	mustWrite(t, filepath.Join(tr.base, "ws-evil", "x.txt"), "sibling\n")
	mustSymlink(t, filepath.Join(tr.outside, "secret.txt"), filepath.Join(tr.ws, "abs-leak.txt"))
	mustSymlink(t, "../outside/secret.txt", filepath.Join(tr.ws, "rel-leak.txt"))
	mustSymlink(t, "../outside", filepath.Join(tr.ws, "outdir"))
	mustSymlink(t, "sub/notes.txt", filepath.Join(tr.ws, "alias.txt"))
	mustSymlink(t, tr.ws, filepath.Join(tr.base, "ws-link"))
	mustSymlink(t, filepath.Join(tr.ws, "sub", "notes.txt"), filepath.Join(tr.ws, "abs-alias.txt"))
	mustSymlink(t, filepath.Join(tr.ws, "sub"), filepath.Join(tr.ws, "abs-subdir"))
	mustSymlink(t, "abs-alias.txt", filepath.Join(tr.ws, "chain.txt"))
	mustSymlink(t, filepath.Join(tr.base, "ws-link", "README.md"), filepath.Join(tr.ws, "via-link.txt"))
	mustSymlink(t, filepath.Join(tr.ws, "abs-subdir", "..", "..", "outside", "secret.txt"), filepath.Join(tr.ws, "abs-dotdot.txt"))
	mustSymlink(t, "loop-b", filepath.Join(tr.ws, "loop-a"))
	mustSymlink(t, filepath.Join(tr.ws, "loop-a"), filepath.Join(tr.ws, "loop-b"))
	r := openRoot(t, tr.ws, workspace.FileLimits{})

	cases := []struct {
		name, path string
		want       string
		wantKind   workspace.FileErrorKind
	}{
		{"file inside", filepath.Join(tr.ws, "README.md"), "inside\n", ""},
		{"dot-dot staying inside", tr.ws + "/sub/../README.md", "inside\n", ""},
		{"relative symlink inside", filepath.Join(tr.ws, "alias.txt"), "notes\n", ""},
		{"path through a symlink to the root", filepath.Join(tr.base, "ws-link", "README.md"), "inside\n", ""},
		{"absolute symlink inside", filepath.Join(tr.ws, "abs-alias.txt"), "notes\n", ""},
		{"absolute symlink to a dir inside", filepath.Join(tr.ws, "abs-subdir", "notes.txt"), "notes\n", ""},
		{"relative link to an absolute link", filepath.Join(tr.ws, "chain.txt"), "notes\n", ""},
		{"absolute link through a link outside to the root", filepath.Join(tr.ws, "via-link.txt"), "", workspace.FileOutside},
		{"absolute link climbing out with ..", filepath.Join(tr.ws, "abs-dotdot.txt"), "", workspace.FileOutside},
		{"symlink loop", filepath.Join(tr.ws, "loop-a"), "", workspace.FileOutside},
		{"relative path", "README.md", "", workspace.FileInvalidPath},
		{"dot-dot escaping", tr.ws + "/../outside/secret.txt", "", workspace.FileOutside},
		{"sibling sharing the root's prefix", filepath.Join(tr.base, "ws-evil", "x.txt"), "", workspace.FileOutside},
		{"absolute symlink to outside", filepath.Join(tr.ws, "abs-leak.txt"), "", workspace.FileOutside},
		{"relative symlink escaping", filepath.Join(tr.ws, "rel-leak.txt"), "", workspace.FileOutside},
		{"file under a symlinked dir outside", filepath.Join(tr.ws, "outdir", "secret.txt"), "", workspace.FileOutside},
		{"missing file", filepath.Join(tr.ws, "nope.txt"), "", workspace.FileNotFound},
		{"the root directory", tr.ws, "", workspace.FileNotRegular},
		{"a directory", filepath.Join(tr.ws, "sub"), "", workspace.FileNotRegular},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.ReadText(context.Background(), tc.path, nil, nil)
			if kindOf(err) != tc.wantKind || got != tc.want {
				t.Fatalf("ReadText(%s): got (%q, %v), want (%q, kind %q)", tc.path, got, err, tc.want, tc.wantKind)
			}
		})
	}
}

func TestWriteConfinement(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the path to write and the file outside that must
		// stay as it was.
		setup    func(t *testing.T, tr tree) (path, victim string)
		wantKind workspace.FileErrorKind
	}{
		{"new file inside", func(t *testing.T, tr tree) (string, string) {
			return filepath.Join(tr.ws, "new.txt"), filepath.Join(tr.outside, "new.txt")
		}, ""},
		{"existing file inside", func(t *testing.T, tr tree) (string, string) {
			return filepath.Join(tr.ws, "README.md"), filepath.Join(tr.outside, "secret.txt")
		}, ""},
		{"symlink to an existing file outside", func(t *testing.T, tr tree) (string, string) {
			mustSymlink(t, "../outside/secret.txt", filepath.Join(tr.ws, "link.txt"))
			return filepath.Join(tr.ws, "link.txt"), filepath.Join(tr.outside, "secret.txt")
		}, workspace.FileOutside},
		{"dangling symlink to a new file outside", func(t *testing.T, tr tree) (string, string) {
			mustSymlink(t, filepath.Join(tr.outside, "planted.txt"), filepath.Join(tr.ws, "link.txt"))
			return filepath.Join(tr.ws, "link.txt"), filepath.Join(tr.outside, "planted.txt")
		}, workspace.FileOutside},
		{"new file under a symlinked dir outside", func(t *testing.T, tr tree) (string, string) {
			mustSymlink(t, "../outside", filepath.Join(tr.ws, "outdir"))
			return filepath.Join(tr.ws, "outdir", "new.txt"), filepath.Join(tr.outside, "new.txt")
		}, workspace.FileOutside},
		{"hard link to a file outside", func(t *testing.T, tr tree) (string, string) {
			if err := os.Link(filepath.Join(tr.outside, "secret.txt"), filepath.Join(tr.ws, "hard.txt")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(tr.ws, "hard.txt"), filepath.Join(tr.outside, "secret.txt")
		}, workspace.FileHardLinked},
		{"symlink inside to a hard link", func(t *testing.T, tr tree) (string, string) {
			if err := os.Link(filepath.Join(tr.outside, "secret.txt"), filepath.Join(tr.ws, "hard.txt")); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, "hard.txt", filepath.Join(tr.ws, "soft.txt"))
			return filepath.Join(tr.ws, "soft.txt"), filepath.Join(tr.outside, "secret.txt")
		}, workspace.FileHardLinked},
		{"new file in a missing dir", func(t *testing.T, tr tree) (string, string) {
			return filepath.Join(tr.ws, "a", "b.txt"), filepath.Join(tr.outside, "b.txt")
		}, workspace.FileNotFound},
		{"a directory", func(t *testing.T, tr tree) (string, string) {
			return tr.ws, filepath.Join(tr.outside, "secret.txt")
		}, workspace.FileNotRegular},
	}
	const content = "written by the agent\n"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			path, victim := tc.setup(t, tr)
			before, beforeErr := os.ReadFile(victim)
			err := openRoot(t, tr.ws, workspace.FileLimits{}).WriteText(context.Background(), path, content)
			if kindOf(err) != tc.wantKind {
				t.Errorf("WriteText(%s): got %v, want kind %q", path, err, tc.wantKind)
			}
			after, afterErr := os.ReadFile(victim)
			if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("file outside %s: got %q (err %v), want it unchanged: %q (err %v)", victim, after, afterErr, before, beforeErr)
			}
			if tc.wantKind == "" {
				if got, _ := os.ReadFile(path); string(got) != content {
					t.Errorf("written file: got %q, want %q", got, content)
				}
			}
		})
	}
}

// TestHardLinkedReadIsServed documents the read side of hard links: a
// link can only be made by someone who could already read the file (see
// docs/security.md), and shared stores (pnpm) fill node_modules with them.
func TestHardLinkedReadIsServed(t *testing.T) {
	tr := newTree(t)
	hard := filepath.Join(tr.ws, "hard.txt")
	if err := os.Link(filepath.Join(tr.outside, "secret.txt"), hard); err != nil {
		t.Fatal(err)
	}
	got, err := openRoot(t, tr.ws, workspace.FileLimits{}).ReadText(context.Background(), hard, nil, nil)
	if err != nil || got != "secret\n" {
		t.Fatalf("ReadText(hard link): got (%q, %v), want (%q, nil)", got, err, "secret\n")
	}
}

func TestNonRegularFilesAreRefused(t *testing.T) {
	tr := newTree(t)
	fifo := filepath.Join(tr.ws, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A unix socket path must be short; the socket file still lands in ws.
	sock := filepath.Join(tr.ws, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := openRoot(t, tr.ws, workspace.FileLimits{})
	for _, path := range []string{fifo, sock} {
		t.Run(filepath.Base(path)+" read", func(t *testing.T) {
			got, err := r.ReadText(context.Background(), path, nil, nil)
			if kindOf(err) != workspace.FileNotRegular {
				t.Fatalf("ReadText(%s): got (%q, %v), want a not_regular refusal", path, got, err)
			}
		})
		t.Run(filepath.Base(path)+" write", func(t *testing.T) {
			if err := r.WriteText(context.Background(), path, "x"); kindOf(err) != workspace.FileNotRegular {
				t.Fatalf("WriteText(%s): got %v, want a not_regular refusal", path, err)
			}
		})
	}
	t.Run("fifo with a reader, write", func(t *testing.T) {
		// Opening for writing succeeds once someone reads; fstat refuses.
		rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		if err := r.WriteText(context.Background(), fifo, "x"); kindOf(err) != workspace.FileNotRegular {
			t.Fatalf("WriteText(fifo with reader): got %v, want a not_regular refusal", err)
		}
	})
	t.Run("message names a FIFO", func(t *testing.T) {
		_, err := r.ReadText(context.Background(), fifo, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("got %v, want a message naming the named pipe", err)
		}
	})
}

func TestReadRanges(t *testing.T) {
	tr := newTree(t)
	path := filepath.Join(tr.ws, "f.txt")
	mustWrite(t, path, "one\ntwo\nthree")
	r := openRoot(t, tr.ws, workspace.FileLimits{})
	ptr := func(n int) *int { return &n }
	cases := []struct {
		name        string
		line, limit *int
		want        string
	}{
		{"whole file", nil, nil, "one\ntwo\nthree"},
		{"from line 2", ptr(2), nil, "two\nthree"},
		{"line 2, limit 1", ptr(2), ptr(1), "two\n"},
		{"limit 2", nil, ptr(2), "one\ntwo\n"},
		{"line 1", ptr(1), nil, "one\ntwo\nthree"},
		{"line 0 is the start", ptr(0), ptr(1), "one\n"},
		{"last line without newline", ptr(3), ptr(5), "three"},
		{"line past the end", ptr(10), nil, ""},
		{"limit 0", nil, ptr(0), ""},
		{"negative limit is to the end", ptr(3), ptr(-1), "three"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.ReadText(context.Background(), path, tc.line, tc.limit)
			if err != nil || got != tc.want {
				t.Fatalf("ReadText: got (%q, %v), want (%q, nil)", got, err, tc.want)
			}
		})
	}
}

func TestSizeLimits(t *testing.T) {
	tr := newTree(t)
	const size = 256 << 20
	big := filepath.Join(tr.ws, "big.bin")
	mustWrite(t, big, "line 1\nline 2\nline 3\n")
	// Sparse: 256 MiB that cost no disk, NUL bytes after the first lines.
	if err := os.Truncate(big, size); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(tr.ws, "long.txt")
	mustWrite(t, long, "short\n"+strings.Repeat("x", 2000)+"\nend\n")
	r := openRoot(t, tr.ws, workspace.FileLimits{ReadLimit: 1000, WriteLimit: 10})
	ptr := func(n int) *int { return &n }
	cases := []struct {
		name        string
		path        string
		line, limit *int
		want        string
		wantKind    workspace.FileErrorKind
		wantInMsg   []string
	}{
		{"whole sparse file refused with its size", big, nil, nil, "", workspace.FileTooLarge, []string{"268435456 bytes", "line and limit"}},
		{"first lines of the sparse file", big, ptr(1), ptr(2), "line 1\nline 2\n", "", nil},
		{"line 2 only", big, ptr(2), ptr(1), "line 2\n", "", nil},
		{"far past the end streams through and finds nothing", big, ptr(1 << 30), ptr(1), "", "", nil},
		{"from line 3 to the end is too much", big, ptr(3), nil, "", workspace.FileTooLarge, []string{"line and limit"}},
		{"a range within the limit", long, ptr(1), ptr(1), "short\n", "", nil},
		{"a range holding a line over the limit", long, ptr(2), ptr(1), "", workspace.FileTooLarge, nil},
		{"the line after it", long, ptr(3), ptr(1), "end\n", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.ReadText(context.Background(), tc.path, tc.line, tc.limit)
			if kindOf(err) != tc.wantKind || got != tc.want {
				t.Fatalf("ReadText: got (%q, %v), want (%q, kind %q)", got, err, tc.want, tc.wantKind)
			}
			for _, s := range tc.wantInMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q: want it to contain %q", err, s)
				}
			}
		})
	}
	t.Run("write over the limit", func(t *testing.T) {
		path := filepath.Join(tr.ws, "w.txt")
		if err := r.WriteText(context.Background(), path, strings.Repeat("y", 11)); kindOf(err) != workspace.FileTooLarge {
			t.Fatalf("WriteText(11 bytes, limit 10): got %v, want too_large", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("refused write left a file behind: %v", err)
		}
		if err := r.WriteText(context.Background(), path, strings.Repeat("y", 10)); err != nil {
			t.Fatalf("WriteText(10 bytes, limit 10): got %v, want nil", err)
		}
	})
}
