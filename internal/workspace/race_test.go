package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tether/tether/internal/workspace"
)

// swapper keeps replacing link, as fast as it can, with each of its
// targets in turn until stop is called: a target "file:TEXT" is a regular
// file holding TEXT, "dir:TEXT" a directory holding secret.txt with TEXT,
// anything else a symlink to it. A regular file or symlink replaces link
// atomically (rename over it); a directory cannot, so link is removed first.
func swapper(t *testing.T, link string, targets ...string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := link + ".tmp"
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			_ = os.RemoveAll(tmp)
			target := targets[i%len(targets)]
			var err error
			switch {
			case strings.HasPrefix(target, "file:"):
				err = os.WriteFile(tmp, []byte(strings.TrimPrefix(target, "file:")), 0o644)
			case strings.HasPrefix(target, "dir:"):
				if err = os.Mkdir(tmp, 0o755); err == nil {
					err = os.WriteFile(filepath.Join(tmp, "secret.txt"), []byte(strings.TrimPrefix(target, "dir:")), 0o644)
				}
			default:
				err = os.Symlink(target, tmp)
			}
			if err == nil && os.Rename(tmp, link) != nil {
				// A directory on either side: not atomic, but a missing
				// link only gets requests refused. A write racing the
				// removal can keep the directory; the next round retries.
				_ = os.RemoveAll(link)
				_ = os.Rename(tmp, link)
			}
			if err != nil {
				t.Errorf("swap %s to %s: %v", link, target, err)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestSymlinkSwapRace races requests against a symlink (to a file, and to
// a directory) swapped between a target inside and one outside: the check
// and the use are one open relative to the root's handle, so no request
// may ever see or change the outside file.
func TestSymlinkSwapRace(t *testing.T) {
	const (
		iterations = 10000
		workers    = 4
		inside     = "inside\n"
		secret     = "SECRET outside the workspace\n"
	)
	cases := []struct {
		name    string
		link    string   // relative to ws
		path    string   // requested, relative to ws
		targets []string // the link's targets; %s is the tree's outside dir
		write   bool
	}{
		// A symlink swapped for a regular file and back: the old
		// check-then-open leaked and overwrote the outside file here.
		{"regular file and link, reads", "f.txt", "f.txt", []string{"file:" + inside, "../outside/secret.txt", "file:" + inside, "%s/secret.txt"}, false},
		{"regular file and link, writes", "f.txt", "f.txt", []string{"file:" + inside, "../outside/secret.txt", "file:" + inside, "%s/secret.txt"}, true},
		{"directory and link, reads", "d", "d/secret.txt", []string{"dir:" + inside, "../outside", "dir:" + inside, "%s"}, false},
		{"directory and link, writes", "d", "d/secret.txt", []string{"dir:" + inside, "../outside", "dir:" + inside, "%s"}, true},
		// Absolute links inside are followed by rewriting the name (which
		// os.Root does not do): that rewrite must not open a window.
		{"absolute links inside and outside, reads", "link.txt", "link.txt", []string{"%s/../ws/inside.txt", "%s/secret.txt"}, false},
		{"absolute links inside and outside, writes", "link.txt", "link.txt", []string{"%s/../ws/inside.txt", "%s/secret.txt"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			victim := filepath.Join(tr.outside, "secret.txt")
			mustWrite(t, victim, secret)
			mustWrite(t, filepath.Join(tr.ws, "inside.txt"), inside)
			mustWrite(t, filepath.Join(tr.ws, "real", "secret.txt"), inside)
			targets := make([]string, len(tc.targets))
			for i, target := range tc.targets {
				if strings.HasPrefix(target, "%s") {
					target = tr.outside + target[2:]
				}
				targets[i] = target
			}
			r := openRoot(t, tr.ws, workspace.FileLimits{})
			link := filepath.Join(tr.ws, tc.link)
			mustSymlink(t, "inside.txt", link)
			stop := swapper(t, link, targets...)
			path := filepath.Join(tr.ws, tc.path)
			var served, refused atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < iterations/workers; i++ {
						var err error
						if tc.write {
							err = r.WriteText(context.Background(), path, inside)
						} else {
							var got string
							got, err = r.ReadText(context.Background(), path, nil, nil)
							if err == nil && got != inside {
								t.Errorf("read %d through the swapped link: got %q, want %q or a refusal", i, got, inside)
								return
							}
						}
						if err != nil {
							refused.Add(1)
						} else {
							served.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			stop()
			if b, err := os.ReadFile(victim); err != nil || string(b) != secret {
				t.Errorf("file outside after %d requests: got (%q, %v), want it unchanged", iterations, b, err)
			}
			// Both outcomes prove the requests really raced the swap.
			if served.Load() == 0 || refused.Load() == 0 {
				t.Errorf("requests: %d served, %d refused; want both, or the swap did not race them", served.Load(), refused.Load())
			}
		})
	}
}
