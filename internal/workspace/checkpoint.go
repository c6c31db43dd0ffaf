package workspace

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Turn checkpoints: when a turn starts, its executor records the session's
// directory as it is, so that after an interruption the user and the agent
// learn what the turn changed (the recovery report) and a diff can be
// asked against any turn's start.
//
// A checkpoint lives in a bare repository of the executor's own, one per
// session (Config.Checkpoints/<session>.git), whose work tree is the
// session's directory: the user's repository (if there is one) gets no
// object, index entry, ref or stash entry from it, and a directory that is
// no repository has checkpoints too. Each checkpoint is a commit under
// refs/tether/turns/, named by the turn, holding a snapshot of the working
// tree (untracked files included, ignored ones not) and, in its message,
// the user's HEAD at that moment. The shadow repository keeps its own
// index, so git's stat cache makes a turn's checkpoint cost only the files
// that changed since the last one.

// Checkpoint is a turn's record of the workspace as the turn began (or,
// recorded with Request.End, as it ended; restore.go).
type Checkpoint struct {
	Turn string `json:"turn"`
	// Tree is the snapshot of the working tree, in the shadow repository.
	Tree string `json:"tree"`
	// Head is the user's HEAD commit then (empty outside a repository or
	// before its first commit).
	Head string    `json:"head,omitempty"`
	At   time.Time `json:"at"`
}

// checkpointMeta is what a checkpoint commit's message holds.
type checkpointMeta struct {
	Turn string `json:"turn"`
	Head string `json:"head,omitempty"`
}

// namePattern is what a session or turn id must look like to name a
// checkpoint (the API's prompt ids and the daemon's UUIDs do).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// shadowLocks serialises the git commands on each shadow repository: they
// share its index, whose lock a second `git add` would find taken.
var shadowLocks sync.Map // path -> *sync.Mutex

// shadow is one session's checkpoint repository over its directory.
type shadow struct {
	gitDir string
	// root is where its git commands run: the session's directory
	// (sessionDir.execDir).
	root string
}

// env points git at the shadow repository, with the session's directory
// as its work tree: the directory the command runs in, named relative to
// it so that git works in the directory checked, whatever is at its path
// by then.
func (s shadow) env() []string {
	return []string{"GIT_DIR=" + s.gitDir, "GIT_WORK_TREE=.", "GIT_INDEX_FILE=" + filepath.Join(s.gitDir, "index")}
}

func turnRef(turn string) string { return "refs/tether/turns/" + hex.EncodeToString([]byte(turn)) }

// git runs git on the shadow repository. Its configuration is tetherd's
// own (openShadow wrote it) and the user's repository's is not read (its
// GIT_DIR is the shadow's), so no filter driver of the repository's own
// can be named: the lookup runGit makes for them is skipped.
func (s shadow) git(ctx context.Context, env []string, limit int64, args ...string) ([]byte, bool, error) {
	if env == nil {
		env = s.env()
	}
	return runGitFiltered(ctx, s.root, env, limit, false, args...)
}

// openShadow validates a checkpoint request and returns its repository
// (created when create is set), locked until the returned unlock.
func openShadow(ctx context.Context, d *sessionDir, req Request, cfg Config, create bool) (shadow, func(), error) {
	if cfg.Checkpoints == "" {
		return shadow{}, nil, errcode.New(errcode.WorkspaceUnsupported, "this executor keeps no turn checkpoints")
	}
	for what, v := range map[string]string{"session": req.Session, "turn": req.Turn} {
		if !namePattern.MatchString(v) {
			return shadow{}, nil, errcode.New(errcode.InvalidRequest, "%s %q cannot name a checkpoint", what, v).With(what, v)
		}
	}
	s := shadow{gitDir: filepath.Join(cfg.Checkpoints, req.Session+".git"), root: d.execDir()}
	mu, _ := shadowLocks.LoadOrStore(s.gitDir, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	unlock := mu.(*sync.Mutex).Unlock
	if _, err := os.Stat(filepath.Join(s.gitDir, "HEAD")); err == nil {
		return s, unlock, nil
	} else if !create {
		unlock()
		return shadow{}, nil, errcode.New(errcode.WorkspaceCheckpointNotFound, "turn %s has no checkpoint on this executor", req.Turn).With("turn", req.Turn)
	}
	if err := os.MkdirAll(cfg.Checkpoints, 0o700); err != nil {
		unlock()
		return shadow{}, nil, err
	}
	// Private like the rest of the executor's data (what the user's files
	// held is in it): directories 0700, files 0600 (git's objects 0400);
	// no template, so no sample hooks.
	if _, _, err := runGit(ctx, s.root, nil, 1<<12, "init", "--bare", "--quiet", "--shared=0600", "--template=", s.gitDir); err != nil {
		unlock()
		return shadow{}, nil, err
	}
	// Objects written here are only ever reached through the turn refs;
	// no automatic gc needs to run in the middle of a turn's start.
	if _, _, err := runGit(ctx, s.root, []string{"GIT_DIR=" + s.gitDir}, 1<<12, "config", "gc.auto", "0"); err != nil {
		unlock()
		return shadow{}, nil, err
	}
	return s, unlock, nil
}

// snapshot writes the session's directory as a tree of the shadow
// repository. Unreadable files are left out rather than failing it.
func (s shadow) snapshot(ctx context.Context) (string, error) {
	if _, _, err := s.git(ctx, nil, 1<<16, "add", "--all", "--ignore-errors", "--", "."); err != nil {
		return "", err
	}
	out, _, err := s.git(ctx, nil, 1<<10, "write-tree")
	return strings.TrimSpace(string(out)), err
}

// userHead is the session directory's repository HEAD commit, empty
// outside a repository, before its first commit, or in a repository
// tetherd does not read (repoOf): a checkpoint is of the files, whatever
// their repository.
func userHead(ctx context.Context, d *sessionDir) (string, error) {
	if _, err := repoOf(ctx, d); errcode.Is(err, errcode.WorkspaceRepositoryRefused) || errcode.Is(err, errcode.WorkspaceNotRepository) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	out, _, err := runGit(ctx, d.execDir(), nil, 1<<10, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	switch {
	case err == nil:
		return strings.TrimSpace(string(out)), nil
	case errcode.Is(err, errcode.WorkspaceNotRepository):
		return "", nil
	case errcode.Is(err, errcode.Timeout), errcode.Is(err, errcode.WorkspaceGitUnavailable):
		return "", err
	}
	return "", nil // no commit yet
}

// checkpoint records req.Turn's checkpoint (its end's with req.End),
// once: a turn whose checkpoint exists (its start was retried after a
// daemon restart) keeps the first.
func checkpoint(ctx context.Context, d *sessionDir, req Request, cfg Config) (*Checkpoint, error) {
	s, unlock, err := openShadow(ctx, d, req, cfg, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ref := turnRef(req.Turn)
	if req.End {
		ref = endRef(req.Turn)
	}
	tree, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	head, err := userHead(ctx, d)
	if err != nil {
		return nil, err
	}
	cp, err := s.commitSnapshot(ctx, ref, req.Turn, tree, head, true)
	if errors.Is(err, errRefExists) {
		return s.readCommit(ctx, ref, req.Turn) // the first one stays
	}
	return cp, err
}

// read returns a turn's checkpoint from the shadow repository.
func (s shadow) read(ctx context.Context, turn string) (*Checkpoint, error) {
	return s.readCommit(ctx, turnRef(turn), turn)
}

// readCommit returns the checkpoint at ref, which name names.
func (s shadow) readCommit(ctx context.Context, ref, name string) (*Checkpoint, error) {
	out, _, err := runGit(ctx, s.root, s.env(), 1<<16, "cat-file", "commit", ref)
	if err != nil {
		if errcode.Is(err, errcode.Timeout) || errcode.Is(err, errcode.WorkspaceGitUnavailable) {
			return nil, err
		}
		return nil, errcode.New(errcode.WorkspaceCheckpointNotFound, "turn %s has no checkpoint on this executor", name).With("turn", name)
	}
	headers, body, _ := strings.Cut(string(out), "\n\n")
	cp := &Checkpoint{Turn: name}
	for _, l := range strings.Split(headers, "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "tree":
			cp.Tree = v
		case "committer":
			// "name <email> 1733140000 +0000"
			if f := strings.Fields(v); len(f) >= 2 {
				cp.At = unixTime(f[len(f)-2])
			}
		}
	}
	var meta checkpointMeta
	if json.Unmarshal([]byte(strings.TrimSpace(body)), &meta) == nil {
		cp.Head = meta.Head
	}
	return cp, nil
}

func unixTime(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}

// turnDiff is the session's directory now against req.Turn's checkpoint:
// the files changed since the turn began, and whether HEAD moved. With
// req.ToTurn it compares the two turns' checkpoints instead: what changed
// from the start of one turn to the start of the other.
func turnDiff(ctx context.Context, d *sessionDir, req Request, rel string, cfg Config) (*GitDiff, error) {
	if req.Against != "" {
		return nil, errcode.New(errcode.InvalidRequest, "a diff is against a commit or a turn's checkpoint, not both")
	}
	s, unlock, err := openShadow(ctx, d, req, cfg, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cp, err := s.read(ctx, req.Turn)
	if err != nil {
		return nil, err
	}
	var to *Checkpoint
	var tree, head string
	if req.ToTurn != "" {
		if to, err = s.read(ctx, req.ToTurn); err != nil {
			return nil, err
		}
		tree, head = to.Tree, to.Head
	} else {
		if tree, err = s.snapshot(ctx); err != nil {
			return nil, err
		}
		if head, err = userHead(ctx, d); err != nil {
			return nil, err
		}
	}
	dif, err := diffTrees(ctx, s.root, s.env(), "turn:"+req.Turn, cp.Tree, tree, rel, req.Patch, cfg)
	if err != nil {
		return nil, err
	}
	dif.Head, dif.Checkpoint, dif.HeadMoved, dif.ToCheckpoint = head, cp, head != cp.Head, to
	return dif, nil
}
