package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Git state of a workspace, read with the git command of its executor.
// Nothing here changes what the user sees of the repository: status
// takes no optional lock (GIT_OPTIONAL_LOCKS=0), and the working tree is
// compared through a snapshot tree written from a temporary index (Snapshot),
// never through the user's index, refs or stash.

// GitStatus is the repository's branch and changed paths, as `git status`
// sees them. Paths are relative to the repository's top level; Prefix is
// the session's directory relative to it ("" at the top).
type GitStatus struct {
	Branch   string `json:"branch,omitempty"`
	Head     string `json:"head,omitempty"`
	Detached bool   `json:"detached"`
	Upstream string `json:"upstream,omitempty"`
	Ahead    int    `json:"ahead"`
	Behind   int    `json:"behind"`
	Prefix   string `json:"prefix"`
	// Entries: Index and Worktree are git's one-letter states of the path
	// in the index and in the working tree (porcelain v2: "." unchanged,
	// M, A, D, R, C, T, U; "?" untracked).
	Entries []GitStatusEntry `json:"entries"`
}

// GitStatusEntry is one changed path of a GitStatus.
type GitStatusEntry struct {
	Path     string `json:"path"`
	OrigPath string `json:"origPath,omitempty"`
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
}

// GitDiff is the working tree against a commit: which files differ, and
// the patch if asked for.
type GitDiff struct {
	Against string `json:"against"`
	// Base and Tree are the compared trees: Against's, and a snapshot of
	// the working tree (untracked files included, ignored ones not).
	Base  string        `json:"base"`
	Tree  string        `json:"tree"`
	Files []GitDiffFile `json:"files"`
	Patch string        `json:"patch,omitempty"`
	// PatchTruncated: the patch was cut at the diff limit.
	PatchTruncated bool `json:"patchTruncated"`
	// Checkpoint, Head and HeadMoved are set on a diff against a turn's
	// checkpoint (Against "turn:ID"): the checkpoint, HEAD now, and
	// whether it differs from the checkpoint's.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Head       string      `json:"head,omitempty"`
	HeadMoved  bool        `json:"headMoved,omitempty"`
	// ToCheckpoint is the later turn's checkpoint of a diff between two
	// (Request.ToTurn), compared instead of the working tree; Head is then
	// HEAD at that checkpoint. A daemon asking for ToTurn checks it came
	// back: a host that predates it would have compared the working tree.
	ToCheckpoint *Checkpoint `json:"toCheckpoint,omitempty"`
}

// GitDiffFile is one file of a GitDiff. Status is added, modified,
// deleted, renamed, copied or typechange; a binary file has no line
// counts.
type GitDiffFile struct {
	Path      string `json:"path"`
	OldPath   string `json:"oldPath,omitempty"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary"`
}

// GitLog is the newest commits reachable from HEAD.
type GitLog struct {
	Commits []GitCommit `json:"commits"`
}

// GitCommit is one commit of a GitLog.
type GitCommit struct {
	Hash        string    `json:"hash"`
	AuthorName  string    `json:"authorName"`
	AuthorEmail string    `json:"authorEmail"`
	AuthoredAt  time.Time `json:"authoredAt"`
	Subject     string    `json:"subject"`
}

// emptyTree is git's tree with nothing in it (SHA-1 repositories), the
// base of a repository without commits.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitOutputLimit bounds what one git command may print (a status or a
// numstat of a huge tree); patches have their own DiffLimit.
const gitOutputLimit = 64 << 20

// runGit runs git in dir and returns its standard output, at most limit
// bytes (truncated reports a cut). A directory outside any repository is
// errcode.WorkspaceNotRepository.
func runGit(ctx context.Context, dir string, env []string, limit int64, args ...string) (out []byte, truncated bool, err error) {
	return runGitFiltered(ctx, dir, env, limit, !runsNoFilter[args[0]], args...)
}

// runGitFiltered is runGit, the repository's own filter drivers switched
// off first when localFilters (see localFiltersOff): a command on a
// repository whose configuration is tetherd's own (a checkpoint's shadow
// repository) has none to switch off, and skips the lookup.
func runGitFiltered(ctx context.Context, dir string, env []string, limit int64, localFilters bool, args ...string) (out []byte, truncated bool, err error) {
	pre := append([]string{"-c", "core.quotepath=off", "-c", "color.ui=never"}, safeConfig...)
	if localFilters {
		off, err := localFiltersOff(ctx, dir, env)
		if err != nil {
			return nil, false, err
		}
		pre = append(pre, off...)
	}
	cmd := exec.CommandContext(ctx, "git", append(pre, args...)...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, false, errcode.Wrap(errcode.WorkspaceGitUnavailable, err, "git is not installed on the session's executor")
		}
		return nil, false, err
	}
	out, _ = io.ReadAll(io.LimitReader(stdout, limit+1))
	if int64(len(out)) > limit {
		out, truncated = out[:limit], true
		_, _ = io.Copy(io.Discard, stdout)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return nil, false, errcode.Wrap(errcode.Timeout, ctx.Err(), "git %s did not finish in time", args[0])
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		switch {
		case strings.Contains(msg, "not a git repository") || strings.Contains(msg, "must be run in a work tree"):
			return nil, false, errcode.New(errcode.WorkspaceNotRepository, "the session's directory is not in a git repository")
		case strings.Contains(msg, "detected dubious ownership"):
			return nil, false, errcode.New(errcode.WorkspaceRepositoryRefused,
				"git refuses the repository of the session's directory: it belongs to another user than the executor's (git's safe.directory)")
		case strings.Contains(msg, "failed to stat") || strings.Contains(msg, "Unable to read current working directory"):
			// git names its directories by path: one moved away while it ran.
			return nil, false, errcode.New(errcode.WorkspaceRootChanged, "the session's directory was moved or replaced while git ran (%s)", msg)
		}
		return nil, false, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, truncated, nil
}

// gitEnv is the environment of every git command: the executor's, without
// what would point git elsewhere, with no prompts, no pager, no optional
// locks (a status must not take the index lock from the user's own git).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR",
			"GIT_NAMESPACE", "GIT_PREFIX", "LANG", "LC_ALL":
			continue
		}
		env = append(env, kv)
	}
	// GIT_ALLOW_PROTOCOL empty allows no transport whatever the
	// configuration says: -c protocol.allow=never (safeConfig) yields to a
	// repository's own protocol.<name>.allow=always, and a promisor
	// repository's lazy fetch of a missing object would then run its
	// remote's ext:: command or uploadpack. GIT_NO_LAZY_FETCH says the same
	// to a git that knows it (2.44 and later).
	// GIT_ALTERNATE_OBJECT_DIRECTORIES empty: no object directory beyond
	// the ones repoOf checked (gitobjects.go).
	return append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C",
		"GIT_ALLOW_PROTOCOL=", "GIT_NO_LAZY_FETCH=1", "GIT_ALTERNATE_OBJECT_DIRECTORIES=")
}

func gitStatus(ctx context.Context, d *sessionDir) (*GitStatus, error) {
	if _, err := repoOf(ctx, d); err != nil {
		return nil, err
	}
	dir := d.execDir()
	prefix, err := gitPrefix(ctx, dir, nil)
	if err != nil {
		return nil, err
	}
	out, _, err := runGit(ctx, dir, nil, gitOutputLimit, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--ignore-submodules=dirty")
	if err != nil {
		return nil, err
	}
	st := parseStatus(out)
	st.Prefix = prefix
	return st, nil
}

// parseStatus reads `git status --porcelain=v2 --branch -z`.
func parseStatus(out []byte) *GitStatus {
	st := &GitStatus{Entries: []GitStatusEntry{}}
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case strings.HasPrefix(f, "# branch.oid "):
			if oid := strings.TrimPrefix(f, "# branch.oid "); oid != "(initial)" {
				st.Head = oid
			}
		case strings.HasPrefix(f, "# branch.head "):
			if h := strings.TrimPrefix(f, "# branch.head "); h == "(detached)" {
				st.Detached = true
			} else {
				st.Branch = h
			}
		case strings.HasPrefix(f, "# branch.upstream "):
			st.Upstream = strings.TrimPrefix(f, "# branch.upstream ")
		case strings.HasPrefix(f, "# branch.ab "):
			var a, b int
			if _, err := fmt.Sscanf(strings.TrimPrefix(f, "# branch.ab "), "+%d -%d", &a, &b); err == nil {
				st.Ahead, st.Behind = a, b
			}
		case strings.HasPrefix(f, "1 "), strings.HasPrefix(f, "u "):
			// 1 XY sub mH mI mW hH hI path; u XY sub m1 m2 m3 mW h1 h2 h3 path
			n := 9
			if f[0] == 'u' {
				n = 11
			}
			if parts := strings.SplitN(f, " ", n); len(parts) == n && len(parts[1]) == 2 {
				st.Entries = append(st.Entries, GitStatusEntry{Path: parts[n-1], Index: parts[1][:1], Worktree: parts[1][1:]})
			}
		case strings.HasPrefix(f, "2 "):
			// 2 XY sub mH mI mW hH hI Xscore path, then origPath
			if parts := strings.SplitN(f, " ", 10); len(parts) == 10 && len(parts[1]) == 2 {
				e := GitStatusEntry{Path: parts[9], Index: parts[1][:1], Worktree: parts[1][1:]}
				if i+1 < len(fields) {
					i++
					e.OrigPath = fields[i]
				}
				st.Entries = append(st.Entries, e)
			}
		case strings.HasPrefix(f, "? "):
			st.Entries = append(st.Entries, GitStatusEntry{Path: f[2:], Index: "?", Worktree: "?"})
		}
	}
	return st
}

// gitPrefix is dir relative to its repository's top level.
func gitPrefix(ctx context.Context, dir string, env []string) (string, error) {
	out, _, err := runGit(ctx, dir, env, 1<<16, "rev-parse", "--show-prefix")
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSpace(string(out)), "/"), nil
}

// revPattern is what a diff base may look like: a commit id, a ref name,
// and the suffixes that walk from them (HEAD~2, main^, v1.0^{commit}); no
// option, no whitespace, no pathspec magic.
var revPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/@^~{}+-]*$`)

// resolveTree returns the tree of rev (HEAD of a repository without
// commits: the empty tree).
func resolveTree(ctx context.Context, dir, rev string) (string, error) {
	if len(rev) > 256 || !revPattern.MatchString(rev) || strings.Contains(rev, "..") {
		return "", errcode.New(errcode.InvalidRequest, "%q is not a commit name (want a commit id, a branch or tag, or HEAD~N)", rev).With("against", rev)
	}
	out, _, err := runGit(ctx, dir, nil, 1<<10, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{tree}")
	if err == nil {
		return strings.TrimSpace(string(out)), nil
	}
	if errcode.Is(err, errcode.WorkspaceNotRepository) || errcode.Is(err, errcode.Timeout) {
		return "", err
	}
	if rev == "HEAD" {
		if _, _, herr := runGit(ctx, dir, nil, 1<<10, "rev-parse", "--verify", "--quiet", "HEAD"); herr != nil && !errcode.Is(herr, errcode.WorkspaceNotRepository) {
			return emptyTree, nil // no commit yet
		}
	}
	return "", errcode.New(errcode.WorkspaceRevisionNotFound, "%q names no commit of the repository", rev).With("against", rev)
}

// Snapshot writes the working tree of dir's repository as a tree object
// (tracked and untracked files, ignored ones not) and returns its id. It
// works on a copy of the index in a temporary file, so the user's index,
// refs and stash list stay as they were; only objects are added, which
// git's own gc collects once nothing refers to them.
func Snapshot(ctx context.Context, dir string) (string, error) {
	out, _, err := runGit(ctx, dir, nil, 1<<12, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	index := strings.TrimSpace(string(out))
	if !path.IsAbs(index) {
		index = path.Join(dir, index)
	}
	tmp, err := os.CreateTemp("", "tether-index-*")
	if err != nil {
		return "", err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	// A copy of the index keeps git's stat cache: unchanged files are not
	// hashed again. It keeps the index's modification time too: git trusts
	// an entry's stat data only if the file is older than the index
	// ("racy git"), so a copy dated now would hide a file changed within
	// the timestamp granularity of its last `git add`.
	var indexTime time.Time
	if src, err := os.Open(index); err == nil {
		if fi, err := src.Stat(); err == nil {
			indexTime = fi.ModTime()
		}
		_, err = io.Copy(tmp, src)
		src.Close()
		if err != nil {
			tmp.Close()
			return "", err
		}
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if !indexTime.IsZero() {
		if err := os.Chtimes(tmpName, indexTime, indexTime); err != nil {
			return "", err
		}
	}
	if fi, err := os.Stat(tmpName); err == nil && fi.Size() == 0 {
		os.Remove(tmpName) // git refuses an empty index file; none is an empty index
	}
	env := []string{"GIT_INDEX_FILE=" + tmpName}
	if _, _, err := runGit(ctx, dir, env, 1<<16, "add", "--all", "--", ":/"); err != nil {
		return "", err
	}
	out, _, err = runGit(ctx, dir, env, 1<<10, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func gitDiff(ctx context.Context, d *sessionDir, rel, against string, withPatch bool, lim Config) (*GitDiff, error) {
	if against == "" {
		against = "HEAD"
	}
	if _, err := repoOf(ctx, d); err != nil {
		return nil, err
	}
	dir := d.execDir()
	base, err := resolveTree(ctx, dir, against)
	if err != nil {
		return nil, err
	}
	tree, err := Snapshot(ctx, dir)
	if err != nil {
		return nil, err
	}
	return diffTrees(ctx, dir, nil, against, base, tree, rel, withPatch, lim)
}

// diffTrees compares two trees of dir's repository (the one env points
// git at), optionally only under rel (relative to dir; "." for all).
func diffTrees(ctx context.Context, dir string, env []string, against, base, tree, rel string, withPatch bool, lim Config) (*GitDiff, error) {
	lim.defaults()
	var spec []string
	if rel != "." && rel != "" {
		prefix, err := gitPrefix(ctx, dir, env)
		if err != nil {
			return nil, err
		}
		spec = []string{"--", ":(top,literal)" + path.Join(prefix, rel)}
	}
	d := &GitDiff{Against: against, Base: base, Tree: tree, Files: []GitDiffFile{}}
	num, _, err := runGit(ctx, dir, env, gitOutputLimit, append([]string{"diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--numstat", "-z", base, tree}, spec...)...)
	if err != nil {
		return nil, err
	}
	names, _, err := runGit(ctx, dir, env, gitOutputLimit, append([]string{"diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--name-status", "-z", base, tree}, spec...)...)
	if err != nil {
		return nil, err
	}
	d.Files = parseDiffFiles(names, num)
	if withPatch {
		p, cut, err := runGit(ctx, dir, env, lim.DiffLimit, append([]string{"diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "-p", "--no-color", base, tree}, spec...)...)
		if err != nil {
			return nil, err
		}
		d.Patch, d.PatchTruncated = string(p), cut
	}
	return d, nil
}

// parseDiffFiles joins `diff-tree --name-status -z` (which file, how) with
// `--numstat -z` (how many lines), both in the same order.
func parseDiffFiles(names, num []byte) []GitDiffFile {
	var files []GitDiffFile
	nf := strings.Split(string(names), "\x00")
	for i := 0; i < len(nf); i++ {
		st := nf[i]
		if st == "" {
			continue
		}
		f := GitDiffFile{Status: diffStatus(st[0])}
		if (st[0] == 'R' || st[0] == 'C') && i+2 < len(nf) {
			f.OldPath, f.Path = nf[i+1], nf[i+2]
			i += 2
		} else if i+1 < len(nf) {
			f.Path = nf[i+1]
			i++
		}
		files = append(files, f)
	}
	// numstat -z: "A\tD\tpath\0", or for a rename "A\tD\t\0old\0new\0".
	nm := strings.Split(string(num), "\x00")
	k := 0
	for i := 0; i < len(nm) && k < len(files); i++ {
		parts := strings.SplitN(nm[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[2] == "" {
			i += 2 // the rename's two paths
		}
		if parts[0] == "-" {
			files[k].Binary = true
		} else {
			files[k].Additions, _ = strconv.Atoi(parts[0])
			files[k].Deletions, _ = strconv.Atoi(parts[1])
		}
		k++
	}
	if files == nil {
		files = []GitDiffFile{}
	}
	return files
}

func diffStatus(c byte) string {
	switch c {
	case 'A':
		return "added"
	case 'D':
		return "deleted"
	case 'R':
		return "renamed"
	case 'C':
		return "copied"
	case 'T':
		return "typechange"
	}
	return "modified"
}

func gitLog(ctx context.Context, d *sessionDir, limit int) (*GitLog, error) {
	switch {
	case limit <= 0:
		limit = DefaultLogLimit
	case limit > MaxLogLimit:
		limit = MaxLogLimit
	}
	if _, err := repoOf(ctx, d); err != nil {
		return nil, err
	}
	dir := d.execDir()
	l := &GitLog{Commits: []GitCommit{}}
	if _, _, err := runGit(ctx, dir, nil, 1<<10, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
		if errcode.Is(err, errcode.WorkspaceNotRepository) || errcode.Is(err, errcode.Timeout) {
			return nil, err
		}
		return l, nil // no commit yet
	}
	out, _, err := runGit(ctx, dir, nil, gitOutputLimit, "log", "-n", strconv.Itoa(limit), "-z", "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s")
	if err != nil {
		return nil, err
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		p := strings.Split(rec, "\x1f")
		if len(p) != 5 {
			continue
		}
		at, _ := time.Parse(time.RFC3339, p[3])
		l.Commits = append(l.Commits, GitCommit{Hash: p[0], AuthorName: p[1], AuthorEmail: p[2], AuthoredAt: at.UTC(), Subject: p[4]})
	}
	return l, nil
}
