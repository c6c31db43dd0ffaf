package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tether/tether/internal/errcode"
)

// The session's directory itself. tetherd stores it with its symlinks
// resolved (CwdPolicy.ResolveDir), so the session's directory is the one
// reached at that path through no symlink. Whoever may write beside it
// can still replace it, or an ancestor, with a symlink to somewhere else
// (`mv ROOT ROOT.moved; ln -s /elsewhere ROOT`): a path followed blindly
// would then serve /elsewhere. So every workspace request that uses the
// directory opens it, checks that its path still leads to that very
// directory with no symlink on the way, and from then on uses the
// directory it opened, never the path: files through an os.Root made
// from it and checked to be the same directory, programs (git, commands,
// shells) started in it through the open descriptor where the system
// offers one (/proc/self/fd on Linux; elsewhere by the path just checked).
// A directory swapped while the request runs is refused, not followed.
// The agent's own fs requests hold a handle opened when the agent starts
// (Root), to the same effect.

// sessionDir is a session's directory, opened and checked; Close it when
// the request is done.
type sessionDir struct {
	// path is the directory's path as checked: absolute, clean, and with
	// no symlink on the way when it was opened.
	path string
	f    *os.File
	// watch learns of moves of the directory, or one above it, while the
	// request runs (nil where there is no such watch).
	watch *dirWatch
}

// procFD reports whether a program can be started in a directory by the
// descriptor its starter holds (Linux's /proc/self/fd/N; the child
// changes into it before it runs the program, while the descriptor is
// still open).
var procFD = func() bool {
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
}()

// openSessionDir opens root, the directory a request names (a session's
// directory, or the repository of its worktree), and checks that it is
// still the directory at that path: errcode.WorkspaceRootChanged if a
// symlink now leads elsewhere on the way, errcode.WorkingDirMissing if
// nothing is there.
func openSessionDir(root string, cfg Config) (*sessionDir, error) {
	if !filepath.IsAbs(root) {
		return nil, errcode.New(errcode.InvalidRequest, "workspace root must be absolute, got %q", root)
	}
	want := expectedDir(root, cfg)
	f, err := os.Open(root)
	if err != nil {
		if fi, lerr := os.Lstat(root); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, rootChanged(root, "a symlink that leads nowhere is at its path")
		}
		return nil, rootError(root, err)
	}
	d := &sessionDir{path: want, f: f}
	// Watched before it is checked: a move after the checks below is
	// then seen by the watch, one before by the checks.
	d.watch = watchDir(d.execDir(), want)
	fi, err := f.Stat()
	if err != nil {
		d.Close()
		return nil, rootError(root, err)
	}
	if !fi.IsDir() {
		d.Close()
		return nil, errcode.New(errcode.WorkingDirMissing, "the session's directory %s is no longer a directory on its executor", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err == nil && real != want {
		d.Close()
		return nil, rootChanged(root, "it now leads to "+real+" through a symlink")
	}
	// Opened through a symlink that was then put back, the descriptor
	// would be elsewhere: the directory at the path must be the one open.
	here, lerr := os.Lstat(want)
	if err != nil || lerr != nil || !os.SameFile(fi, here) {
		d.Close()
		return nil, rootChanged(root, "it was replaced while it was being opened")
	}
	return d, nil
}

// expectedDir is where root must lead with its symlinks resolved: root
// itself (a session's directory is stored resolved), except under the
// executor's own worktree directory, which may itself be reached through
// a symlink (a data directory given that way): that part is the
// executor's, resolved as it is now.
func expectedDir(root string, cfg Config) string {
	clean := filepath.Clean(root)
	if cfg.Worktrees == "" {
		return clean
	}
	base, err := filepath.Abs(cfg.Worktrees)
	if err != nil {
		return clean
	}
	rel, ok := relWithin(base, clean)
	if !ok {
		return clean
	}
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return clean
	}
	return filepath.Join(real, rel)
}

func rootChanged(root, why string) error {
	return errcode.New(errcode.WorkspaceRootChanged,
		"the session's directory %s is not the directory it was: %s; tetherd does not follow it elsewhere (put the directory back at its path)", root, why).
		With("root", root)
}

// after is the answer to a request that ran in d, err its own: if the
// directory was moved or replaced while the request ran (it, or one above
// it, moved even if put back since: the watch; or it is no longer the one
// at its path), errcode.WorkspaceRootChanged, whatever the request found
// or failed with. git names directories by path: in a directory swapped
// under it, it finds another repository (refused), none (not a
// repository) or one without the commit asked for (revision not found),
// and any of those would misstate what happened to the session's own.
func (d *sessionDir) after(err error) error {
	if errcode.Is(err, errcode.WorkspaceRootChanged) {
		return err
	}
	if d.watch.moved() {
		return rootChanged(d.path, "it, or a directory above it, was moved or removed while the request ran")
	}
	fi, ferr := d.f.Stat()
	here, lerr := os.Lstat(d.path)
	real, rerr := filepath.EvalSymlinks(d.path)
	if ferr != nil || lerr != nil || rerr != nil || real != d.path || !os.SameFile(fi, here) {
		return rootChanged(d.path, "it was moved or replaced while the request ran")
	}
	return err
}

// Close releases the directory.
func (d *sessionDir) Close() error {
	d.watch.close()
	return d.f.Close()
}

// execDir is where a program the request starts should start: the open
// directory itself where the system can name it by its descriptor, else
// its checked path. Valid until Close; a child started in it must have
// started by then. Paths given to the program beside its working
// directory must be relative to it (GIT_WORK_TREE=.): the descriptor is
// not the child's once it runs.
func (d *sessionDir) execDir() string {
	if procFD {
		return "/proc/self/fd/" + strconv.Itoa(int(d.f.Fd()))
	}
	return d.path
}

// openRoot opens the directory for confined file requests (Root), and
// checks the handle is on the directory opened and checked.
func (d *sessionDir) openRoot(lim FileLimits) (*Root, error) {
	lim.defaults()
	r, err := os.OpenRoot(d.path)
	if err != nil {
		return nil, rootError(d.path, err)
	}
	a, err := r.Stat(".")
	b, berr := d.f.Stat()
	if err != nil || berr != nil || !os.SameFile(a, b) {
		r.Close()
		return nil, rootChanged(d.path, "it was replaced while it was being opened")
	}
	return &Root{dir: d.path, real: d.path, root: r, lim: lim, slots: make(chan struct{}, lim.Concurrency)}, nil
}

// rootError explains why the session's directory itself cannot be opened.
func rootError(root string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(errcode.WorkingDirMissing, err, "the session's directory %s no longer exists on its executor", root)
	}
	return errcode.Wrap(errcode.Internal, err, "opening the session's directory %s: %v", root, err)
}
