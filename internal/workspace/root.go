package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// FileLimits bound what an agent's file requests may cost the daemon. The
// zero value of each field takes its default.
type FileLimits struct {
	// ReadLimit is the most bytes one read may return. A whole-file read
	// of a larger file is refused with its size, and the agent is told to
	// read a range with line and limit.
	ReadLimit int64
	// WriteLimit is the most bytes one write may store.
	WriteLimit int64
	// Concurrency is how many requests of one agent connection are served
	// at once; a request stuck in the kernel (an NFS or FUSE hang) keeps
	// its slot, so this also bounds the OS threads one agent can pin.
	Concurrency int
	// Queue is how many more requests may wait for a slot; beyond that
	// they are refused at once as busy.
	Queue int
	// Timeout bounds each request, waiting for a slot included.
	Timeout time.Duration
}

// Default file limits (see docs/security.md).
const (
	DefaultReadLimit   = 4 << 20
	DefaultWriteLimit  = 4 << 20
	DefaultConcurrency = 4
	DefaultQueue       = 32
	DefaultFileTimeout = 10 * time.Second
)

func (l *FileLimits) defaults() {
	if l.ReadLimit <= 0 {
		l.ReadLimit = DefaultReadLimit
	}
	if l.WriteLimit <= 0 {
		l.WriteLimit = DefaultWriteLimit
	}
	if l.Concurrency <= 0 {
		l.Concurrency = DefaultConcurrency
	}
	if l.Queue < 0 {
		l.Queue = 0
	} else if l.Queue == 0 {
		l.Queue = DefaultQueue
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultFileTimeout
	}
}

// Root serves one agent connection's file requests inside the session's
// working directory. The directory is opened once; every request is then
// resolved relative to that handle with openat and O_NOFOLLOW on each
// component (os.Root), so neither "..", nor a symlink, nor a symlink
// swapped in while the request runs can reach outside it, and the file is
// used only through the descriptor that was checked.
type Root struct {
	dir  string // as given to OpenRoot
	real string // dir with symlinks resolved at open time
	root *os.Root
	lim  FileLimits

	slots chan struct{}
	// admitted counts requests holding or waiting for a slot.
	admitted atomic.Int64
}

// OpenRoot opens dir for confined file requests.
func OpenRoot(dir string, lim FileLimits) (*Root, error) {
	lim.defaults()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &Root{dir: filepath.Clean(dir), real: real, root: r, lim: lim, slots: make(chan struct{}, lim.Concurrency)}, nil
}

// Dir is the directory the root was opened on.
func (r *Root) Dir() string { return r.dir }

// Limits are the limits in force, defaults applied.
func (r *Root) Limits() FileLimits { return r.lim }

// Close releases the directory handle. Requests still running finish on
// it (os.Root counts its users); new ones fail.
func (r *Root) Close() error { return r.root.Close() }

// do runs op under the connection's concurrency bound and the request
// timeout. op runs in its own goroutine so that a request stuck in the
// kernel still gets its timeout answer; op stops at its next ctx check,
// and its slot is released only when it has really returned.
func (r *Root) do(ctx context.Context, path string, op func(ctx context.Context) (string, error)) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.lim.Timeout)
	defer cancel()
	if r.admitted.Add(1) > int64(r.lim.Concurrency+r.lim.Queue) {
		r.admitted.Add(-1)
		return "", fileErr(FileBusy, path, nil,
			"too many file requests at once (%d running, %d waiting at most): retry when earlier ones have answered",
			r.lim.Concurrency, r.lim.Queue)
	}
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		r.admitted.Add(-1)
		return "", r.ended(ctx, path)
	}
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			<-r.slots
			r.admitted.Add(-1)
		}()
		text, err := op(ctx)
		done <- result{text, err}
	}()
	select {
	case res := <-done:
		return res.text, res.err
	case <-ctx.Done():
		return "", r.ended(ctx, path)
	}
}

// ended is the answer to a request whose context ended first.
func (r *Root) ended(ctx context.Context, path string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fileErr(FileTimeout, path, ctx.Err(), "file request on %s timed out after %s", path, r.lim.Timeout)
	}
	return ctx.Err()
}

// rel turns the agent's absolute path into a name relative to the root.
// The check is lexical and only chooses the name: the open that follows is
// confined by the directory handle whatever happens on disk meanwhile.
func (r *Root) rel(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fileErr(FileInvalidPath, path, nil, "path must be absolute, got %q", path)
	}
	clean := filepath.Clean(path)
	for _, base := range []string{r.dir, r.real} {
		if rel, ok := relWithin(base, clean); ok {
			return rel, nil
		}
	}
	// The path may name the workspace through a symlink (/tmp vs
	// /private/tmp): resolve its parent to find the name inside.
	if parent, err := filepath.EvalSymlinks(filepath.Dir(clean)); err == nil {
		if rel, ok := relWithin(r.real, filepath.Join(parent, filepath.Base(clean))); ok {
			return rel, nil
		}
	}
	return "", fileErr(FileOutside, path, nil, "%s is outside the session directory %s", path, r.dir)
}

func relWithin(base, path string) (string, bool) {
	rel, err := filepath.Rel(base, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// maxLinks bounds the symlinks insideName follows, as the kernel does.
const maxLinks = 40

// insideName resolves rel component by component inside the root, turning
// symlinks with absolute targets inside the workspace (which os.Root
// refuses) into names relative to it. It only chooses a name: the open
// that follows goes through the handle again, so a link changed in
// between can redirect it within the workspace or get it refused, never
// take it outside.
func (r *Root) insideName(rel string) (string, bool) {
	pending := strings.Split(filepath.ToSlash(rel), "/")
	done := "." // resolved so far, free of symlinks
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(done, part)
		if !filepath.IsLocal(next) {
			return "", false
		}
		fi, err := r.root.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = next // a missing last component is for the open to judge
			continue
		}
		if links++; links > maxLinks {
			return "", false
		}
		target, err := r.root.Readlink(next)
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			t, ok := relWithin(r.real, filepath.Clean(target))
			if !ok {
				if t, ok = relWithin(r.dir, filepath.Clean(target)); !ok {
					return "", false
				}
			}
			target, done = t, "."
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	return done, true
}
