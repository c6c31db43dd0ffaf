package workspace

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/terminal"
)

// The workspace API: a session's files and git state for its user, served
// by the session's executor (the daemon for standalone sessions, the
// executor host otherwise) whether or not the agent runs. Every path is
// relative to the session's directory, "/"-separated, and confined to it
// the way the agent's own file requests are (Root): no "..", no absolute
// path, no symlink that leads out.

// Op is one workspace operation.
type Op string

// The workspace operations.
const (
	OpList      Op = "list"
	OpRead      Op = "read"
	OpStat      Op = "stat"
	OpGitStatus Op = "git_status"
	OpGitDiff   Op = "git_diff"
	OpGitLog    Op = "git_log"
	// OpCheckpoint records a turn's checkpoint (Checkpoint).
	OpCheckpoint Op = "checkpoint"
)

// Request is one workspace operation, the same value whether the daemon
// serves it or sends it to an executor host.
type Request struct {
	// Root is the session's working directory (absolute).
	Root string `json:"root"`
	Op   Op     `json:"op"`
	// Path is relative to Root; empty (or ".") is Root itself.
	Path string `json:"path,omitempty"`
	// Offset and Length select a read's byte range (Length 0: up to the
	// read limit).
	Offset int64 `json:"offset,omitempty"`
	Length int64 `json:"length,omitempty"`
	// Against is a diff's base: a commit (default HEAD).
	Against string `json:"against,omitempty"`
	// Session and Turn name a checkpoint: the one OpCheckpoint records,
	// or the one a diff is against (instead of Against).
	Session string `json:"session,omitempty"`
	Turn    string `json:"turn,omitempty"`
	// End has OpCheckpoint record the turn's end instead of its start.
	End bool `json:"end,omitempty"`
	// Restore is what OpRestore restores, and where.
	Restore *RestoreSpec `json:"restore,omitempty"`
	// ToTurn, with Turn, has a diff compare Turn's checkpoint with this
	// later turn's instead of the working tree.
	ToTurn string `json:"toTurn,omitempty"`
	// Branch is a worktree's branch; Keep has a release keep the
	// worktree even when it is clean.
	Branch string `json:"branch,omitempty"`
	Keep   bool   `json:"keep,omitempty"`
	// At is a new worktree's commit (default HEAD); Bare makes it without
	// writing its files when the session's directory is the worktree's
	// top (a fork writes its own; Worktree.Bare says it did).
	At   string `json:"at,omitempty"`
	Bare bool   `json:"bare,omitempty"`
	// Terminal names a terminal; Data is what is typed into it; Cols and
	// Rows size it; WaitMS bounds a read's wait for output (Offset is
	// where the read starts).
	Terminal string `json:"terminal,omitempty"`
	Data     []byte `json:"data,omitempty"`
	Cols     int    `json:"cols,omitempty"`
	Rows     int    `json:"rows,omitempty"`
	WaitMS   int    `json:"waitMs,omitempty"`
	// Command is what OpCommandRun runs (sh -c).
	Command string `json:"command,omitempty"`
	// Held (OpCommandRun) keeps the command's output for its follower
	// until acknowledged, the command waiting while its buffer is full,
	// instead of dropping the oldest (terminal.Set.Follow).
	Held bool `json:"held,omitempty"`
	// Ack (OpTerminalRead of a held command): the follower has recorded
	// the output before this offset. Discard: it records no more; the
	// output is dropped from now on and the read waits for the exit.
	// An executor that predates them ignores them: the output is then
	// kept as a terminal's, the newest only.
	Ack     int64 `json:"ack,omitempty"`
	Discard bool  `json:"discard,omitempty"`
	// Patch asks a diff for the patch text besides the per-file summary.
	Patch bool `json:"patch,omitempty"`
	// Limit bounds a log's commits (0: DefaultLogLimit).
	Limit int `json:"limit,omitempty"`
}

// Result is a workspace operation's answer: the member of its Op.
type Result struct {
	Listing    *Listing        `json:"listing,omitempty"`
	File       *FileContent    `json:"file,omitempty"`
	Entry      *Entry          `json:"entry,omitempty"`
	GitStatus  *GitStatus      `json:"gitStatus,omitempty"`
	GitDiff    *GitDiff        `json:"gitDiff,omitempty"`
	GitLog     *GitLog         `json:"gitLog,omitempty"`
	Checkpoint *Checkpoint     `json:"checkpoint,omitempty"`
	Restored   *Restored       `json:"restored,omitempty"`
	Worktree   *Worktree       `json:"worktree,omitempty"`
	Terminal   *terminal.Info  `json:"terminal,omitempty"`
	Terminals  []terminal.Info `json:"terminals,omitempty"`
	Output     *terminal.Chunk `json:"output,omitempty"`
}

// Config is how an executor serves workspace requests: what one request
// may cost it, and where it keeps turn checkpoints. The zero value of each
// limit takes its default.
type Config struct {
	// Checkpoints is the directory of the turn checkpoints, one bare git
	// repository per session (Checkpoint); empty refuses checkpoints.
	Checkpoints string
	// Worktrees is the directory of the sessions' worktrees (Worktree);
	// empty refuses them.
	Worktrees string
	// Terminals are the executor's interactive terminals; nil switches
	// them off (errcode.TerminalDisabled).
	Terminals *terminal.Set
	// ListLimit is the most entries one listing returns.
	ListLimit int
	// ReadLimit is the most bytes one read returns.
	ReadLimit int64
	// DiffLimit is the most bytes of patch text one diff returns.
	DiffLimit int64
	// Timeout bounds each request (git commands included).
	Timeout time.Duration
}

// Default workspace limits.
const (
	DefaultListLimit = 10000
	DefaultAPIRead   = 1 << 20
	DefaultDiffLimit = 4 << 20
	DefaultLogLimit  = 50
	MaxLogLimit      = 1000
	DefaultTimeout   = 30 * time.Second
	// maxPath bounds a request's path, as PATH_MAX does.
	maxPath = 4096
	// sniffLen is how much of a file decides whether it is binary: a NUL
	// byte in it makes it so, as git decides.
	sniffLen = 8000
)

func (l *Config) defaults() {
	if l.ListLimit <= 0 {
		l.ListLimit = DefaultListLimit
	}
	if l.ReadLimit <= 0 {
		l.ReadLimit = DefaultAPIRead
	}
	if l.DiffLimit <= 0 {
		l.DiffLimit = DefaultDiffLimit
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
}

// Entry describes one file system object of the workspace. Type is
// "file", "dir", "symlink" or "other" (a FIFO, socket or device); a
// symlink is described as itself, never followed.
type Entry struct {
	Path       string    `json:"path"`
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	Mode       string    `json:"mode"`
	ModifiedAt time.Time `json:"modifiedAt"`
}

// Listing is a directory's entries, directories first, then by name.
type Listing struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	// Truncated: the directory holds more than the listing limit.
	Truncated bool `json:"truncated"`
}

// FileContent is a byte range of a regular file. Content is the bytes as
// UTF-8 text (Encoding "utf-8") or, when they are not valid UTF-8 or the
// file is binary, in base64 (Encoding "base64").
type FileContent struct {
	Path       string    `json:"path"`
	Size       int64     `json:"size"`
	Offset     int64     `json:"offset"`
	Length     int64     `json:"length"`
	Binary     bool      `json:"binary"`
	Encoding   string    `json:"encoding"`
	Content    string    `json:"content"`
	ModifiedAt time.Time `json:"modifiedAt"`
	// Truncated: the range ends before the file does.
	Truncated bool `json:"truncated"`
}

// Serve performs req on its executor's file system.
func Serve(ctx context.Context, req Request, lim Config) (Result, error) {
	lim.defaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	rel, err := CleanPath(req.Path)
	if err != nil {
		return Result{}, err
	}
	if !filepath.IsAbs(req.Root) {
		return Result{}, errcode.New(errcode.InvalidRequest, "workspace root must be absolute, got %q", req.Root)
	}
	if isTerminalOp(req.Op) {
		return serveTerminal(ctx, req, lim)
	}
	d, err := openSessionDir(req.Root, lim)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()
	res, err := serveIn(ctx, d, req, rel, lim)
	if err = d.after(err); err != nil {
		return Result{}, err
	}
	return res, nil
}

// serveIn performs req in the session's directory d.
func serveIn(ctx context.Context, d *sessionDir, req Request, rel string, lim Config) (Result, error) {
	switch req.Op {
	case OpGitStatus:
		st, err := gitStatus(ctx, d)
		return Result{GitStatus: st}, err
	case OpGitDiff:
		if req.Turn != "" {
			dif, err := turnDiff(ctx, d, req, rel, lim)
			return Result{GitDiff: dif}, err
		}
		if req.ToTurn != "" {
			return Result{}, errcode.New(errcode.InvalidRequest, "toTurn compares two turns' checkpoints: it needs turn")
		}
		dif, err := gitDiff(ctx, d, rel, req.Against, req.Patch, lim)
		return Result{GitDiff: dif}, err
	case OpCheckpoint:
		cp, err := checkpoint(ctx, d, req, lim)
		return Result{Checkpoint: cp}, err
	case OpRestore:
		r, err := restore(ctx, d, req, lim)
		return Result{Restored: r}, err
	case OpWorktreeEnsure:
		wt, err := ensureWorktree(ctx, d, req, lim)
		return Result{Worktree: wt}, err
	case OpWorktreeRelease:
		wt, err := releaseWorktree(ctx, d, req, lim)
		return Result{Worktree: wt}, err
	case OpGitLog:
		l, err := gitLog(ctx, d, req.Limit)
		return Result{GitLog: l}, err
	}
	r, err := d.openRoot(FileLimits{ReadLimit: lim.ReadLimit})
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	switch req.Op {
	case OpList:
		l, err := r.list(rel, lim.ListLimit)
		return Result{Listing: l}, apiError(err)
	case OpRead:
		f, err := r.readRange(rel, req.Offset, req.Length, lim.ReadLimit)
		return Result{File: f}, apiError(err)
	case OpStat:
		e, err := r.stat(rel)
		return Result{Entry: e}, apiError(err)
	}
	return Result{}, errcode.New(errcode.InvalidRequest, "unknown workspace operation %q", req.Op)
}

// CleanPath checks a workspace-relative path and returns it cleaned ("."
// for the root). It refuses what could only be meant to leave the
// workspace or confuse it: an absolute path, a ".." component, a NUL byte,
// a path longer than PATH_MAX.
func CleanPath(p string) (string, error) {
	bad := func(why string) error {
		return errcode.New(errcode.WorkspacePathInvalid, "path %q %s", p, why).With("path", p)
	}
	switch {
	case len(p) > maxPath:
		return "", errcode.New(errcode.WorkspacePathInvalid, "path is %d bytes long, more than %d", len(p), maxPath)
	case strings.ContainsRune(p, 0):
		return "", bad("contains a NUL byte")
	case strings.HasPrefix(p, "/"):
		return "", bad("is absolute: paths are relative to the session's directory")
	case !utf8.ValidString(p):
		return "", bad("is not valid UTF-8")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", bad("has a .. component: paths stay inside the session's directory")
		}
	}
	if c := path.Clean("/" + p); c != "/" {
		return c[1:], nil
	}
	return ".", nil
}

// list reads a directory's entries, at most limit of them.
func (r *Root) list(rel string, limit int) (*Listing, error) {
	f, fi, err := r.openAny(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.IsDir() {
		return nil, errcode.New(errcode.WorkspaceNotDirectory, "%s is %s, not a directory", rel, describeMode(fi.Mode())).With("path", rel)
	}
	des, err := f.ReadDir(limit + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fileErr(FileIO, rel, err, "reading directory %s: %v", rel, err)
	}
	l := &Listing{Path: rel, Entries: make([]Entry, 0, min(len(des), limit))}
	if len(des) > limit {
		des, l.Truncated = des[:limit], true
	}
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		l.Entries = append(l.Entries, entryOf(path.Join(rel, de.Name()), info))
	}
	slices.SortFunc(l.Entries, func(a, b Entry) int {
		if (a.Type == "dir") != (b.Type == "dir") {
			if a.Type == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return l, nil
}

// stat describes one path without following a final symlink.
func (r *Root) stat(rel string) (*Entry, error) {
	name := rel
	if n, ok := r.insideName(path.Dir(rel)); ok {
		name = filepath.Join(n, path.Base(rel))
	}
	fi, err := r.root.Lstat(name)
	if err != nil {
		return nil, openError(rel, err)
	}
	e := entryOf(rel, fi)
	return &e, nil
}

// readRange reads [offset, offset+length) of a regular file, at most max
// bytes.
func (r *Root) readRange(rel string, offset, length, max int64) (*FileContent, error) {
	if offset < 0 || length < 0 {
		return nil, errcode.New(errcode.InvalidRequest, "offset and length must not be negative")
	}
	f, fi, err := r.openAny(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, errcode.New(errcode.WorkspaceNotFile, "%s is %s, not a regular file", rel, describeMode(fi.Mode())).With("path", rel)
	}
	size := fi.Size()
	if offset > size {
		return nil, errcode.New(errcode.InvalidRequest, "offset %d is past the end of %s (%d bytes)", offset, rel, size)
	}
	n := size - offset
	if length > 0 {
		n = min(n, length)
	}
	n = min(n, max)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fileErr(FileIO, rel, err, "reading %s: %v", rel, err)
	}
	buf = buf[:got]
	sniff := buf
	if offset != 0 {
		sniff = make([]byte, min(size, sniffLen))
		k, _ := f.ReadAt(sniff, 0)
		sniff = sniff[:k]
	}
	c := &FileContent{Path: rel, Size: size, Offset: offset, Length: int64(got), ModifiedAt: fi.ModTime().UTC(),
		Binary: isBinary(sniff), Truncated: offset+int64(got) < size}
	if c.Binary || !utf8.Valid(buf) {
		c.Encoding, c.Content = "base64", base64.StdEncoding.EncodeToString(buf)
	} else {
		c.Encoding, c.Content = "utf-8", string(buf)
	}
	return c, nil
}

// openAny opens rel inside the root, of whatever type, following
// symlinks only while they stay inside.
func (r *Root) openAny(rel string) (*os.File, fs.FileInfo, error) {
	f, err := r.root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil && isEscape(err) {
		if name, ok := r.insideName(rel); ok && name != rel {
			f, err = r.root.OpenFile(name, os.O_RDONLY|openFlags, 0)
		}
	}
	if err != nil {
		return nil, nil, openError(rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileErr(FileIO, rel, err, "stat %s: %v", rel, err)
	}
	return f, fi, nil
}

func entryOf(p string, fi fs.FileInfo) Entry {
	t := "other"
	switch m := fi.Mode(); {
	case m.IsRegular():
		t = "file"
	case m.IsDir():
		t = "dir"
	case m&fs.ModeSymlink != 0:
		t = "symlink"
	}
	return Entry{Path: p, Name: path.Base(p), Type: t, Size: fi.Size(), Mode: fi.Mode().String(), ModifiedAt: fi.ModTime().UTC()}
}

func isBinary(b []byte) bool {
	return slices.Contains(b[:min(len(b), sniffLen)], 0)
}

// apiError turns a file error into the workspace API's codes.
func apiError(err error) error {
	var fe *FileError
	if !errors.As(err, &fe) {
		return err
	}
	code := errcode.Internal
	switch fe.Kind {
	case FileInvalidPath:
		code = errcode.WorkspacePathInvalid
	case FileOutside:
		code = errcode.WorkspacePathOutside
	case FileNotFound:
		code = errcode.WorkspacePathNotFound
	case FileNotRegular:
		code = errcode.WorkspaceNotFile
	case FileTooLarge:
		code = errcode.PayloadTooLarge
	case FileBusy:
		code = errcode.SessionOverloaded
	case FileTimeout:
		code = errcode.Timeout
	}
	return errcode.Wrap(code, err, "%s", fe.Message).With("path", fe.Path)
}
