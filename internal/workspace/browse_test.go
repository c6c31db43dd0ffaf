package workspace_test

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/workspace"
)

// codeOf is the errcode of err, "" for nil and "other" for an error
// without one.
func codeOf(err error) errcode.Code {
	if err == nil {
		return ""
	}
	var de *errcode.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return "other"
}

// browseTree is a workspace with a file of each kind, links that stay in
// and links that lead out, beside a secret outside it.
func browseTree(t *testing.T) tree {
	t.Helper()
	tr := newTree(t)
	mustWrite(t, filepath.Join(tr.ws, "a.txt"), "hello\n")
	mustWrite(t, filepath.Join(tr.ws, "sub", "b.txt"), "in sub\n")
	mustWrite(t, filepath.Join(tr.ws, "big.txt"), strings.Repeat("0123456789", 10))
	mustWrite(t, filepath.Join(tr.ws, "bin.dat"), "ab\x00cd")
	mustWrite(t, filepath.Join(tr.ws, "latin1.txt"), "caf\xe9")
	mustWrite(t, filepath.Join(tr.outside, "secret"), "secret\n")
	mustSymlink(t, "a.txt", filepath.Join(tr.ws, "link-in"))
	mustSymlink(t, filepath.Join(tr.ws, "sub"), filepath.Join(tr.ws, "link-abs-in"))
	mustSymlink(t, filepath.Join(tr.outside, "secret"), filepath.Join(tr.ws, "link-out"))
	mustSymlink(t, "../outside", filepath.Join(tr.ws, "link-dir-out"))
	return tr
}

func TestServeFiles(t *testing.T) {
	tr := browseTree(t)
	lim := workspace.Config{ReadLimit: 40, ListLimit: 100}
	cases := []struct {
		name string
		req  workspace.Request
		want errcode.Code
		// check looks at a successful result.
		check func(t *testing.T, r workspace.Result)
	}{
		{name: "list root", req: workspace.Request{Op: workspace.OpList}, check: func(t *testing.T, r workspace.Result) {
			var names []string
			for _, e := range r.Listing.Entries {
				names = append(names, e.Name+":"+e.Type)
			}
			want := "sub:dir README.md:file a.txt:file big.txt:file bin.dat:file latin1.txt:file link-abs-in:symlink link-dir-out:symlink link-in:symlink link-out:symlink"
			if got := strings.Join(names, " "); got != want {
				t.Errorf("entries: got %s, want %s", got, want)
			}
		}},
		{name: "list subdirectory", req: workspace.Request{Op: workspace.OpList, Path: "sub"}, check: func(t *testing.T, r workspace.Result) {
			if len(r.Listing.Entries) != 1 || r.Listing.Entries[0].Path != "sub/b.txt" {
				t.Errorf("got %+v, want sub/b.txt", r.Listing.Entries)
			}
		}},
		{name: "list through a link that stays in", req: workspace.Request{Op: workspace.OpList, Path: "link-abs-in"}, check: func(t *testing.T, r workspace.Result) {
			if len(r.Listing.Entries) != 1 || r.Listing.Entries[0].Name != "b.txt" {
				t.Errorf("got %+v, want b.txt", r.Listing.Entries)
			}
		}},
		{name: "read text", req: workspace.Request{Op: workspace.OpRead, Path: "a.txt"}, check: func(t *testing.T, r workspace.Result) {
			if f := r.File; f.Content != "hello\n" || f.Encoding != "utf-8" || f.Binary || f.Truncated || f.Size != 6 {
				t.Errorf("got %+v, want hello as utf-8, whole", f)
			}
		}},
		{name: "read through a relative link inside", req: workspace.Request{Op: workspace.OpRead, Path: "link-in"}, check: func(t *testing.T, r workspace.Result) {
			if r.File.Content != "hello\n" {
				t.Errorf("got %q, want hello", r.File.Content)
			}
		}},
		{name: "read a range", req: workspace.Request{Op: workspace.OpRead, Path: "big.txt", Offset: 95, Length: 3}, check: func(t *testing.T, r workspace.Result) {
			if f := r.File; f.Content != "567" || f.Offset != 95 || f.Length != 3 || !f.Truncated {
				t.Errorf("got %+v, want 567 at 95, truncated", f)
			}
		}},
		{name: "read past the read limit is cut", req: workspace.Request{Op: workspace.OpRead, Path: "big.txt"}, check: func(t *testing.T, r workspace.Result) {
			if f := r.File; f.Length != 40 || !f.Truncated || f.Size != 100 {
				t.Errorf("got length %d truncated %v size %d, want 40 of 100, truncated", f.Length, f.Truncated, f.Size)
			}
		}},
		{name: "binary file in base64", req: workspace.Request{Op: workspace.OpRead, Path: "bin.dat"}, check: func(t *testing.T, r workspace.Result) {
			b, _ := base64.StdEncoding.DecodeString(r.File.Content)
			if !r.File.Binary || r.File.Encoding != "base64" || string(b) != "ab\x00cd" {
				t.Errorf("got %+v, want binary in base64", r.File)
			}
		}},
		{name: "text that is not UTF-8 in base64", req: workspace.Request{Op: workspace.OpRead, Path: "latin1.txt"}, check: func(t *testing.T, r workspace.Result) {
			if r.File.Binary || r.File.Encoding != "base64" {
				t.Errorf("got %+v, want text in base64", r.File)
			}
		}},
		{name: "stat a link describes the link", req: workspace.Request{Op: workspace.OpStat, Path: "link-out"}, check: func(t *testing.T, r workspace.Result) {
			if r.Entry.Type != "symlink" {
				t.Errorf("got %+v, want a symlink", r.Entry)
			}
		}},
		{name: "stat root", req: workspace.Request{Op: workspace.OpStat}, check: func(t *testing.T, r workspace.Result) {
			if r.Entry.Type != "dir" || r.Entry.Path != "." {
				t.Errorf("got %+v, want the root dir", r.Entry)
			}
		}},
		{name: "dot dot", req: workspace.Request{Op: workspace.OpList, Path: ".."}, want: errcode.WorkspacePathInvalid},
		{name: "dot dot inside", req: workspace.Request{Op: workspace.OpRead, Path: "sub/../../outside/secret"}, want: errcode.WorkspacePathInvalid},
		{name: "dot dot that stays in", req: workspace.Request{Op: workspace.OpRead, Path: "sub/../a.txt"}, want: errcode.WorkspacePathInvalid},
		{name: "absolute path", req: workspace.Request{Op: workspace.OpRead, Path: "/etc/passwd"}, want: errcode.WorkspacePathInvalid},
		{name: "NUL byte", req: workspace.Request{Op: workspace.OpRead, Path: "a.txt\x00.png"}, want: errcode.WorkspacePathInvalid},
		{name: "too long", req: workspace.Request{Op: workspace.OpStat, Path: strings.Repeat("a/", 3000)}, want: errcode.WorkspacePathInvalid},
		{name: "symlink to a file outside", req: workspace.Request{Op: workspace.OpRead, Path: "link-out"}, want: errcode.WorkspacePathOutside},
		{name: "symlink to a directory outside", req: workspace.Request{Op: workspace.OpList, Path: "link-dir-out"}, want: errcode.WorkspacePathOutside},
		{name: "through a symlink outside", req: workspace.Request{Op: workspace.OpRead, Path: "link-dir-out/secret"}, want: errcode.WorkspacePathOutside},
		{name: "stat through a symlink outside", req: workspace.Request{Op: workspace.OpStat, Path: "link-dir-out/secret"}, want: errcode.WorkspacePathOutside},
		{name: "missing", req: workspace.Request{Op: workspace.OpRead, Path: "nope.txt"}, want: errcode.WorkspacePathNotFound},
		{name: "read a directory", req: workspace.Request{Op: workspace.OpRead, Path: "sub"}, want: errcode.WorkspaceNotFile},
		{name: "list a file", req: workspace.Request{Op: workspace.OpList, Path: "a.txt"}, want: errcode.WorkspaceNotDirectory},
		{name: "offset past the end", req: workspace.Request{Op: workspace.OpRead, Path: "a.txt", Offset: 7}, want: errcode.InvalidRequest},
		{name: "negative length", req: workspace.Request{Op: workspace.OpRead, Path: "a.txt", Length: -1}, want: errcode.InvalidRequest},
		{name: "unknown operation", req: workspace.Request{Op: "rm"}, want: errcode.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Root = tr.ws
			r, err := workspace.Serve(context.Background(), tc.req, lim)
			if got := codeOf(err); got != tc.want {
				t.Fatalf("got error %v (code %q), want code %q", err, got, tc.want)
			}
			if err == nil && tc.check != nil {
				tc.check(t, r)
			}
			if err != nil && strings.Contains(err.Error(), "secret\n") {
				t.Errorf("the error leaks the secret: %v", err)
			}
		})
	}
}

func TestServeListingLimit(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		mustWrite(t, filepath.Join(dir, n), n)
	}
	r, err := workspace.Serve(context.Background(), workspace.Request{Root: dir, Op: workspace.OpList}, workspace.Config{ListLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Listing.Entries) != 3 || !r.Listing.Truncated {
		t.Errorf("got %d entries, truncated %v; want 3, truncated", len(r.Listing.Entries), r.Listing.Truncated)
	}
}

func TestServeMissingRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	_, err := workspace.Serve(context.Background(), workspace.Request{Root: dir, Op: workspace.OpList}, workspace.Config{})
	if got := codeOf(err); got != errcode.WorkingDirMissing {
		t.Errorf("got %v (code %q), want %q", err, got, errcode.WorkingDirMissing)
	}
}
