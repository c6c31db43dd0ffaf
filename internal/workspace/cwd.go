// Package workspace owns the directory a session works in: which
// directories may be one (CwdPolicy) and the agent's confined access to
// the files inside it (Root).
package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tether/tether/internal/errcode"
)

// subtreeSuffix marks a cwd rule that covers a directory and everything
// under it ("/proc/..."); a rule without it covers that directory only.
const subtreeSuffix = "/..."

// AllowCwdFlag is the tetherd flag that exempts directories from the
// refused list; refusals name it so the user knows the way out.
const AllowCwdFlag = "--allow-cwd"

// DefaultRefusedCwds are the directories no session may work in unless
// allowed: the file system root, the top-level OS directories themselves
// (their children stay allowed: /etc/nixos or /var/www/site are real
// projects) and the kernel's pseudo file systems with everything under
// them. An agent runs in its cwd with fs access confined to it, so a system
// directory as cwd hands the agent the system.
var DefaultRefusedCwds = []string{
	"/",
	"/bin", "/boot/...", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin",
	"/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/share",
	"/var", "/var/lib", "/var/log", "/run",
	"/dev/...", "/proc/...", "/sys/...",
	// macOS, where /etc and /var resolve into /private.
	"/System/...", "/Library", "/private", "/private/etc", "/private/var",
}

// CwdPolicy decides which directories may be a session's working
// directory. The zero value refuses DefaultRefusedCwds.
type CwdPolicy struct {
	// Refuse adds rules to DefaultRefusedCwds: an absolute directory, or
	// "DIR/..." for DIR and everything under it.
	Refuse []string
	// Allow exempts directories and everything under them from every
	// refusal; "/" allows any directory.
	Allow []string
}

// ParseCwdList splits a comma-separated flag value into clean absolute
// rules (keeping a trailing "/..."), refusing relative entries.
func ParseCwdList(s string) ([]string, error) {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		dir, subtree := strings.CutSuffix(part, subtreeSuffix)
		if subtree && dir == "" {
			dir = "/"
		}
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("cwd rule %q: want an absolute directory", part)
		}
		dir = filepath.Clean(dir)
		if subtree {
			dir = strings.TrimSuffix(dir, "/") + subtreeSuffix
		}
		out = append(out, dir)
	}
	return out, nil
}

// ResolveDir turns a client-supplied working directory into the canonical
// path the agent will run in: it must be absolute, exist, be a directory and
// not be refused by the policy. Symlinks are resolved first, so the stored
// path (and the fs confinement derived from it) is the real location, not a
// link that could later be re-pointed elsewhere, and a link cannot smuggle
// a system directory past the policy.
func (p CwdPolicy) ResolveDir(path string) (string, error) {
	if path == "" {
		return "", errcode.New(errcode.InvalidCwd, "cwd is required")
	}
	if !filepath.IsAbs(path) {
		return "", errcode.New(errcode.InvalidCwd, "cwd must be an absolute path, got %q", path)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(path))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", errcode.New(errcode.InvalidCwd, "cwd %q does not exist", path)
		}
		return "", errcode.Wrap(errcode.InvalidCwd, err, "cwd %q cannot be resolved", path)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidCwd, err, "cwd %q cannot be read", path)
	}
	if !fi.IsDir() {
		return "", errcode.New(errcode.InvalidCwd, "cwd %q is not a directory", path)
	}
	if rule, refused := p.refusal(real); refused {
		shown := real
		if real != filepath.Clean(path) {
			shown = fmt.Sprintf("%s (%s)", path, real)
		}
		return "", errcode.New(errcode.CwdRefused,
			"cwd %s is a system directory (rule %q): an agent there could read and change the system; start tetherd with %s %s to allow it",
			shown, rule, AllowCwdFlag, real).
			With("cwd", real).With("rule", rule)
	}
	return real, nil
}

// refusal returns the rule that refuses dir (a clean absolute path), if
// any and unless an Allow entry covers it.
func (p CwdPolicy) refusal(dir string) (string, bool) {
	for _, a := range p.Allow {
		if within(filepath.Clean(strings.TrimSuffix(a, subtreeSuffix)), dir) {
			return "", false
		}
	}
	for _, rules := range [][]string{DefaultRefusedCwds, p.Refuse} {
		for _, r := range rules {
			base, subtree := strings.CutSuffix(r, subtreeSuffix)
			if base == "" {
				base = "/"
			}
			if dir == base || (subtree && within(base, dir)) {
				return r, true
			}
		}
	}
	return "", false
}

// within reports whether path is base or lies under it, lexically (both
// clean and absolute).
func within(base, path string) bool {
	if base == "/" || base == path {
		return true
	}
	return strings.HasPrefix(path, base+string(filepath.Separator))
}
