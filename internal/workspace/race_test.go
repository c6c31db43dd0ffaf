package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tether/tether/internal/workspace"
)

// swapper re-points link between its targets as fast as it can (an atomic
// rename of a fresh symlink over it) until stop is called.
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
			_ = os.Remove(tmp)
			if err := os.Symlink(targets[i%len(targets)], tmp); err != nil {
				t.Errorf("symlink: %v", err)
				return
			}
			if err := os.Rename(tmp, link); err != nil {
				t.Errorf("rename: %v", err)
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
		iterations = 3000
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
		{"file link, reads", "link.txt", "link.txt", []string{"inside.txt", "../outside/secret.txt"}, false},
		{"file link with an absolute target, reads", "link.txt", "link.txt", []string{"inside.txt", "%s/secret.txt"}, false},
		{"directory link, reads", "d", "d/secret.txt", []string{"real", "../outside"}, false},
		{"file link, writes", "link.txt", "link.txt", []string{"inside.txt", "../outside/secret.txt"}, true},
		{"directory link, writes", "d", "d/secret.txt", []string{"real", "../outside"}, true},
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
				if len(target) > 2 && target[:2] == "%s" {
					target = tr.outside + target[2:]
				}
				targets[i] = target
			}
			r := openRoot(t, tr.ws, workspace.FileLimits{})
			link := filepath.Join(tr.ws, tc.link)
			mustSymlink(t, targets[0], link)
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
