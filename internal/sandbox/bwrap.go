package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// BwrapEnv names the variable that picks the bubblewrap executable
// (default: bwrap on PATH). Operators point it at a build of their own;
// tests point it at nothing to see a machine without bubblewrap.
const BwrapEnv = "TETHER_BWRAP"

// Spec is one launch's sandbox: the policy in force and what the
// launching process knows must stay out of the agent's sight.
type Spec struct {
	Policy Policy
	// Hidden are paths the agent never sees: tetherd's data dir, the
	// executor host's dir, token files, sockets, the agents config.
	Hidden []string
	// Self is the tetherd executable, which runs the loopback forwarder
	// inside the sandbox (NetworkLoopback only).
	Self string
}

// Launch is a command ready to start, inside the sandbox or not.
type Launch struct {
	Path string
	// Args are the arguments after Path.
	Args []string
	// Sandboxed reports the command runs in the sandbox; when an auto
	// policy could not sandbox it, Reason says why.
	Sandboxed bool
	Reason    string
	fwd       *forwarder
	// opts are bubblewrap's options, NUL-separated, which it reads from a
	// pipe (Configure) instead of its command line: the agent reads that
	// as its pid 1's, and the options name every path the sandbox hides.
	opts  []byte
	optsR *os.File
}

// optionsFD is the descriptor bubblewrap reads its options from (--args):
// the first of exec.Cmd.ExtraFiles.
const optionsFD = 3

// Configure readies cmd, made from Path and Args, for the launch: in the
// sandbox, bubblewrap's options on a pipe at descriptor 3. Call Started
// once cmd.Start has returned.
func (l *Launch) Configure(cmd *exec.Cmd) error {
	if l.opts == nil {
		return nil
	}
	if len(cmd.ExtraFiles) != 0 {
		return errors.New("sandbox: descriptor 3 is taken, and bubblewrap reads its options there")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: bubblewrap's options: %w", err)
	}
	cmd.ExtraFiles = []*os.File{r}
	l.optsR = r
	// The pipe holds the options before bubblewrap reads them (a few KiB);
	// more wait for it. A start that fails ends the write: Started
	// closes the last reader.
	go func(opts []byte) {
		_, _ = w.Write(opts)
		_ = w.Close()
	}(l.opts)
	return nil
}

// Started releases the launching process's end of the options pipe, once
// the command has started (bubblewrap holds its own) or failed to.
func (l *Launch) Started() {
	if l.optsR != nil {
		_ = l.optsR.Close()
		l.optsR = nil
	}
}

// Close releases what the launch holds outside the sandbox (the loopback
// forwarder). Call it once the agent has ended.
func (l *Launch) Close() {
	l.Started()
	if l.fwd != nil {
		l.fwd.close()
	}
}

// probes are the checks made, by the bubblewrap they named (BwrapEnv):
// each is made once per process.
var probes struct {
	mu   sync.Mutex
	done map[string]probe
}

type probe struct {
	path string
	err  error
}

// bwrap is the bubblewrap this process uses, and whether it works.
func bwrap() (string, error) {
	name := os.Getenv(BwrapEnv)
	if name == "" {
		name = "bwrap"
	}
	probes.mu.Lock()
	defer probes.mu.Unlock()
	p, ok := probes.done[name]
	if !ok {
		p.path, p.err = check(name)
		if probes.done == nil {
			probes.done = map[string]probe{}
		}
		probes.done[name] = p
	}
	return p.path, p.err
}

// Available reports whether bubblewrap works here with everything a
// sandbox uses (PID, IPC and network namespaces, procfs, a dropped
// capability set): nil, or why not.
func Available() error {
	_, err := bwrap()
	return err
}

func check(path string) (string, error) {
	resolved, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("bubblewrap (%s) not found: install it (Debian: apt-get install bubblewrap): %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := []string{"--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-net", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", "true"}
	cmd := exec.CommandContext(ctx, resolved, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("bubblewrap (%s) does not work here: %v: %s", resolved, err, strings.TrimSpace(stderr.String()))
	}
	return resolved, nil
}

// Prepare decides how to start command (with args, in dir, with env) under
// s: inside the sandbox, or, for mode off or an auto policy on a machine
// without a working bubblewrap, as is. A required policy that cannot be
// met is an errcode.SandboxUnavailable error (Unavailable). ownHome says the profile set HOME itself
// (a directory for the agent alone), which then stays writable.
func Prepare(s Spec, command string, args []string, dir string, env []string, ownHome bool) (*Launch, error) {
	p := s.Policy.Defaults()
	plain := &Launch{Path: command, Args: args}
	if p.Mode == ModeOff {
		plain.Reason = "sandbox mode off"
		return plain, nil
	}
	bin, err := bwrap()
	if err != nil {
		if p.Mode == ModeRequired {
			return nil, Unavailable(err)
		}
		plain.Reason = err.Error()
		return plain, nil
	}
	b := builder{home: envValue(env, "HOME")}
	b.system()
	writable := p.Writable
	if writable == nil {
		writable = StateDirs(command)
	}
	if ownHome && b.home != "" {
		writable = append(slices.Clone(writable), b.home)
	}
	if b.home != "" && real(b.home) != "/" && !slices.Contains(expandAll(writable, b.home), filepath.Clean(b.home)) {
		// A throwaway HOME: tools find one, and the user's stays unseen.
		b.add(op{kind: "--tmpfs", path: real(b.home)})
	}
	for _, r := range expandAll(p.Readable, b.home) {
		b.bind("--ro-bind-try", real(r))
	}
	b.bind("--ro-bind", installRoot(command))
	if dir != "" {
		b.bind("--bind", real(dir))
		if common := gitCommonDir(dir); common != "" {
			// A git worktree keeps its index, HEAD and objects in its
			// repository's git directory: without it git fails there
			// (and an agent that finds its sessions through the
			// repository's worktrees, as claude's fork does, fails).
			// Writable, as it is for a session in the repository itself.
			b.bind("--bind-try", common)
		}
	}
	for _, w := range expandAll(writable, b.home) {
		if ok, _ := exists(w); !ok && filepath.Ext(w) == "" {
			_ = os.MkdirAll(w, 0o700) // so state written inside survives the agent
		}
		b.bind("--bind-try", real(w))
	}
	for _, h := range s.Hidden {
		b.hide(h)
	}
	l := &Launch{Sandboxed: true}
	inner := append([]string{command}, args...)
	var initArgs []string
	switch p.Network {
	case NetworkNone:
		b.flags = append(b.flags, "--unshare-net")
	case NetworkLoopback:
		if s.Self == "" {
			return nil, errors.New("sandbox: network loopback needs the tetherd executable to forward ports")
		}
		fwd, err := listen(p.Ports)
		if err != nil {
			return nil, err
		}
		l.fwd = fwd
		b.flags = append(b.flags, "--unshare-net")
		b.add(op{kind: "--bind", path: fwd.dir, dest: insideSocketDir})
		initArgs = []string{"--socket", insideSocketDir + "/" + socketName, "--ports", joinPorts(p.Ports)}
	}
	if s.Self != "" {
		// tetherd's init is the sandbox's pid 1 (InitCommand says why).
		b.flags = append(b.flags, "--as-pid-1")
		b.bind("--ro-bind", real(s.Self))
		inner = append(append(append([]string{s.Self, InitCommand}, initArgs...), "--"), inner...)
	} else {
		// Without tetherd to be its init, bubblewrap's waits for every
		// process of the sandbox: dying with its parent (bwrap's monitor,
		// which ends with the agent) is what ends them.
		b.flags = append(b.flags, "--die-with-parent")
	}
	l.Path = bin
	l.opts = []byte(strings.Join(b.args(dir), "\x00") + "\x00")
	l.Args = append([]string{"--args", strconv.Itoa(optionsFD), "--"}, inner...)
	return l, nil
}

// Unavailable is the error of a required sandbox that cannot be made
// here, why being Available's answer.
func Unavailable(why error) error {
	return errcode.Wrap(errcode.SandboxUnavailable, why, "the agent's sandbox is required (sandbox mode required) but cannot be made here: %v", why)
}

// op is one mount of the sandbox's file system view.
type op struct {
	kind string // --ro-bind, --bind, --tmpfs, --symlink...
	path string // the source (and destination unless dest is set)
	dest string
	hide bool
}

type builder struct {
	home  string
	flags []string
	ops   []op
}

// system makes the system visible read-only: /usr and /etc, the merged-usr
// links, software in /opt, and DNS configuration under /run.
func (b *builder) system() {
	b.flags = []string{"--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL"}
	for _, d := range []string{"/usr", "/etc", "/opt", "/nix/store", "/run/systemd/resolve"} {
		if ok, _ := exists(d); ok {
			b.add(op{kind: "--ro-bind", path: d})
		}
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				b.add(op{kind: "--symlink", path: target, dest: d})
			}
		case fi.IsDir():
			b.add(op{kind: "--ro-bind", path: d})
		}
	}
}

func (b *builder) add(o op) { b.ops = append(b.ops, o) }

func (b *builder) bind(kind, path string) {
	if path == "" || path == "/" {
		return
	}
	b.add(op{kind: kind, path: path})
}

// hide covers path (a directory with an empty tmpfs, a file with
// /dev/null) wherever something bound shows it. Inside a hidden directory
// nothing more is covered, unless a bind there shows it again: a cover
// inside the tmpfs would make its mount point, and show the name of what
// it hides (the token, the socket, agents.yaml).
func (b *builder) hide(path string) {
	if path == "" {
		return // a flag left unset: "." is not to be hidden
	}
	path = real(path)
	ok, dir := exists(path)
	if !ok || !b.shown(path) {
		return
	}
	if !dir {
		b.add(op{kind: "--ro-bind", path: "/dev/null", dest: path, hide: true})
		return
	}
	var inside []string
	b.ops = slices.DeleteFunc(b.ops, func(o op) bool {
		if o.hide && within(o.target(), path) {
			inside = append(inside, o.target())
			return true
		}
		return false
	})
	b.add(op{kind: "--tmpfs", path: path, hide: true})
	for _, p := range inside {
		b.hide(p) // again, now that the tmpfs covers it
	}
}

// shown reports whether the mounts already planned make path visible: the
// innermost one that holds it shows it (a bind), or covers it (a hide;
// at the same depth the hide wins, as args mounts it last).
func (b *builder) shown(path string) bool {
	var inner *op
	for i := range b.ops {
		o := &b.ops[i]
		if o.kind == "--symlink" || !within(path, o.target()) {
			continue
		}
		if inner == nil || depth(o.target()) > depth(inner.target()) ||
			(depth(o.target()) == depth(inner.target()) && o.hide) {
			inner = o
		}
	}
	return inner != nil && !inner.hide
}

func (o op) target() string {
	if o.dest != "" {
		return o.dest
	}
	return o.path
}

// args renders bubblewrap's options: flags, then mounts parents first (a
// hidden path after what shows it, a bind inside a hidden path after the
// hiding), then the working directory.
func (b *builder) args(dir string) []string {
	ops := slices.Clone(b.ops)
	slices.SortStableFunc(ops, func(x, y op) int {
		if d := depth(x.target()) - depth(y.target()); d != 0 {
			return d
		}
		switch {
		case x.hide && !y.hide:
			return 1
		case y.hide && !x.hide:
			return -1
		}
		return 0
	})
	out := slices.Clone(b.flags)
	out = append(out, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	for _, o := range ops {
		if o.kind == "--tmpfs" {
			out = append(out, o.kind, o.path)
			continue
		}
		out = append(out, o.kind, o.path, o.target())
	}
	if dir != "" {
		out = append(out, "--chdir", real(dir))
	}
	return out
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(filepath.Clean(p), "/")
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// installRoot is what must be readable for command to run: the outermost
// node_modules its real path lies in (an npm-installed agent needs its
// dependencies), else the executable itself.
func installRoot(command string) string {
	r := real(command)
	parts := strings.Split(r, string(filepath.Separator))
	for i, part := range parts {
		if part == "node_modules" {
			return strings.Join(parts[:i+1], string(filepath.Separator))
		}
	}
	return r
}

func expandAll(paths []string, home string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if strings.HasPrefix(p, "~/") && home == "" {
			continue
		}
		out = append(out, expand(p, home))
	}
	return out
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val // the last one wins, as in exec.Cmd
		}
	}
	return v
}

func joinPorts(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// gitCommonDir is the repository git directory of a git worktree whose
// top is dir (its .git a file naming the worktree's git directory), ""
// for anything else.
func gitCommonDir(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "" // none, or a directory: a repository's own checkout
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	common := gitdir
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		if common = strings.TrimSpace(string(c)); !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
	}
	if ok, isDir := exists(common); !ok || !isDir {
		return ""
	}
	return real(filepath.Clean(common))
}
