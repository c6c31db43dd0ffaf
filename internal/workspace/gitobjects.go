package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// Where a repository's objects come from. git reads objects not only from
// <common dir>/objects but from every object directory its alternates
// name (objects/info/alternates, one path a line, relative to the objects
// directory; followed recursively in each alternate), as `git clone
// --shared` or `--reference` sets up; and a loose object or pack inside
// objects/ may be a symlink to a file anywhere. Either puts another
// repository's objects, and with them its files, behind a workspace: a
// diff against one of its commit ids shows them. So a repository is
// read only when every object directory it draws on, and every symlink in
// them, leads to a place the workspace already holds: the session's
// directory, the repository's work tree, or its own git directory. The
// environment's GIT_ALTERNATE_OBJECT_DIRECTORIES, the other route, is
// emptied for every git command (gitEnv).

// objectsConfined refuses r when an object directory it draws on, or a
// symlink in one, leads outside the places the workspace holds (root, the
// session's directory; r's work tree; r's common dir).
func objectsConfined(root string, r *repository) error {
	var held []string
	for _, p := range []string{root, r.top, r.commonDir} {
		held = append(held, resolved(p))
	}
	inside := func(p string) bool {
		for _, h := range held {
			if within(h, p) {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	queue := []string{resolved(filepath.Join(r.commonDir, "objects"))}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if !inside(dir) {
			return refused(root, "its objects come from %s, outside the session's directory (an alternate, as `git clone --shared` or `--reference` makes; `git repack -a -d` and removing objects/info/alternates make the repository self-contained)", dir)
		}
		if err := linksConfined(root, dir, inside); err != nil {
			return err
		}
		alts, err := alternates(dir)
		if err != nil {
			return refused(root, "its alternates file in %s cannot be read: %v", dir, err)
		}
		queue = append(queue, alts...)
	}
	return nil
}

// linksConfined refuses a symlink in the object directory dir (a loose
// object, a pack, a fan-out directory) that leads outside the held places.
func linksConfined(root, dir string, inside func(string) bool) error {
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // no objects yet
			}
			return err
		}
		if e.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if target, err := filepath.EvalSymlinks(p); err != nil || !inside(target) {
			return refused(root, "%s is a symlink leading outside the session's directory", p)
		}
		return nil
	})
	if err != nil && !errcode.Is(err, errcode.WorkspaceRepositoryRefused) {
		return refused(root, "its object directory %s cannot be read: %v", dir, err)
	}
	return err
}

// alternates reads the object directories named in dir's
// info/alternates, as git does: a line each, blank lines and those
// starting with # skipped, C-quoted if it starts with a double quote,
// relative to dir. Each is returned with its symlinks resolved (as far
// as it exists).
func alternates(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "info", "alternates"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			if line, err = strconv.Unquote(line); err != nil {
				return nil, errors.New("a quoted line tetherd cannot read")
			}
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(dir, line)
		}
		out = append(out, resolved(line))
	}
	return out, nil
}

// resolved is p with its symlinks resolved, or p made clean if it does not
// exist (then it leads nowhere yet, and is judged by its name).
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}
