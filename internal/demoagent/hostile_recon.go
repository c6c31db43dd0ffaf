package demoagent

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// loot is what /hostile knows to attack: the test's targets and what it
// found on its own.
type loot struct {
	tokenFiles, dataDirs, sockets, hostAddrs, apiAddrs []string
	// tokens are secrets found (in a command line, an environment, a
	// token file read): each is tried on the API and on the hosts.
	tokens []string
	// notes say where each finding came from, for the report.
	notes []string
	// exposed are the secrets' paths and values found in a command line
	// or an environment, and looked counts those looked at.
	exposed []string
	looked  int
}

func addUnique(list *[]string, v string) bool {
	if v == "" || slices.Contains(*list, v) {
		return false
	}
	*list = append(*list, v)
	return true
}

// addToken adds a token found where; exposed says where is a command
// line or an environment.
func (l *loot) addToken(v, where string, exposed bool) {
	what := fmt.Sprintf("a token (%d bytes) in %s", len(v), where)
	if v != "" && exposed {
		l.exposed = append(l.exposed, what)
	}
	if addUnique(&l.tokens, v) {
		l.notes = append(l.notes, what)
	}
}

// addDataDir adds a data dir and the files tether keeps in it by default:
// tetherd's token, the detached host's dir, token and socket, a host's own.
func (l *loot) addDataDir(d string) {
	if !addUnique(&l.dataDirs, filepath.Clean(d)) {
		return
	}
	for _, f := range []string{"token", "host/token"} {
		addUnique(&l.tokenFiles, filepath.Join(d, f))
	}
	for _, s := range []string{"host/host.sock", "host.sock"} {
		addUnique(&l.sockets, filepath.Join(d, s))
	}
}

// discover adds to the test's targets what an attacker finds on the
// machine: its ancestors' command lines and environments (tetherd serve,
// tetherd host, bwrap), its own environment, and the default data dirs
// under HOME.
func discover(tg HostileTargets) *loot {
	l := &loot{}
	for _, f := range tg.TokenFiles {
		addUnique(&l.tokenFiles, f)
	}
	for _, d := range tg.DataDirs {
		l.addDataDir(d)
	}
	for _, s := range tg.HostSockets {
		addUnique(&l.sockets, s)
	}
	for _, a := range tg.HostAddrs {
		addUnique(&l.hostAddrs, a)
	}
	addUnique(&l.apiAddrs, tg.APIAddr)
	l.fromEnv(os.Environ(), "my own environment")
	l.looked++
	for _, pid := range ancestors(os.Getpid()) {
		argv := procStrings(pid, "cmdline")
		if len(argv) == 0 || !tetherProcess(argv[0]) {
			continue // only tether's are its targets, not the machine's
		}
		l.fromArgv(argv, fmt.Sprintf("the command line of pid %d (%s)", pid, filepath.Base(argv[0])))
		l.fromEnv(procStrings(pid, "environ"), fmt.Sprintf("the environment of pid %d", pid))
		l.looked++
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		l.addDataDir(filepath.Join(x, "tether"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		l.addDataDir(filepath.Join(h, ".local", "share", "tether"))
	}
	if len(l.apiAddrs) == 0 {
		addUnique(&l.apiAddrs, "127.0.0.1:7777") // serve's default --addr
	}
	return l
}

// tetherProcess reports whether the executable argv0 names is tetherd or
// the sandbox it runs agents in.
func tetherProcess(argv0 string) bool {
	base := filepath.Base(argv0)
	return strings.HasPrefix(base, "tetherd") || base == "bwrap"
}

// fromEnv takes tetherd's variables (serve's flags' defaults).
func (l *loot) fromEnv(env []string, where string) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			continue
		}
		switch k {
		case "TETHER_TOKEN":
			l.addToken(v, where, true)
		case "TETHER_TOKEN_FILE", "TETHER_TLS_KEY":
			l.note(&l.tokenFiles, v, k, where, true)
		case "TETHER_DATA_DIR", "TETHER_HOST_DIR":
			l.noteDataDir(v, k, where)
		case "TETHER_ADDR":
			l.note(&l.apiAddrs, v, k, where, false)
		}
	}
}

// fromArgv takes the flags of tetherd serve and tetherd host that name
// secrets or where they are, and the paths a bwrap command line hides
// (a file covered by /dev/null, a directory by a tmpfs).
func (l *loot) fromArgv(argv []string, where string) {
	bwrap := filepath.Base(argv[0]) == "bwrap"
	for i := 1; i < len(argv); i++ {
		arg := argv[i]
		next := func(n int) string {
			if i+n < len(argv) {
				return argv[i+n]
			}
			return ""
		}
		if bwrap {
			switch {
			case arg == "--" || !strings.HasPrefix(arg, "--"):
			case arg == "--tmpfs" && next(1) != "/tmp":
				l.noteDataDir(next(1), arg, where)
			case (arg == "--ro-bind" || arg == "--bind") && next(1) == "/dev/null":
				l.note(&l.tokenFiles, next(2), arg+" /dev/null", where, true)
				addUnique(&l.sockets, next(2))
			}
			continue
		}
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		name, value, inline := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !inline {
			value = next(1)
		}
		switch name {
		case "token":
			l.addToken(value, where+" (--token)", true)
		case "token-file", "tls-key":
			l.note(&l.tokenFiles, value, "--"+name, where, true)
		case "socket":
			l.note(&l.sockets, value, "--"+name, where, true)
		case "data-dir", "agents-dir", "host-dir":
			l.noteDataDir(value, "--"+name, where)
		case "addr":
			l.note(&l.apiAddrs, value, "--"+name, where, false)
		case "listen":
			l.note(&l.hostAddrs, value, "--"+name, where, false)
		}
	}
}

// note adds v, found as what in where (a command line or an
// environment), to list; secret says it names where a secret is.
func (l *loot) note(list *[]string, v, what, where string, secret bool) {
	if v == "" {
		return
	}
	found := fmt.Sprintf("%s %s in %s", what, v, where)
	if secret {
		l.exposed = append(l.exposed, found)
	}
	if addUnique(list, v) {
		l.notes = append(l.notes, found)
	}
}

// noteDataDir is note for a data dir, which holds secrets.
func (l *loot) noteDataDir(d, what, where string) {
	if d == "" {
		return
	}
	found := fmt.Sprintf("%s %s in %s", what, d, where)
	l.exposed = append(l.exposed, found)
	if !slices.Contains(l.dataDirs, filepath.Clean(d)) {
		l.notes = append(l.notes, found)
		l.addDataDir(d)
	}
}

// findSecrets reports the secrets' paths and values found in the command
// lines and environments it could read (its ancestors', its own).
func (l *loot) findSecrets() AttackResult {
	a := &attempt{name: AttackFindSecrets}
	if len(l.exposed) == 0 {
		a.fail(fmt.Sprintf("%d command lines and environments", l.looked), errors.New("none names a secret"))
	}
	for _, e := range l.exposed {
		a.win("found", e)
	}
	return a.result()
}

// connectSockets connects to every unix socket found.
func (l *loot) connectSockets() AttackResult {
	a := &attempt{name: AttackHostSocket}
	for _, s := range l.sockets {
		c, err := net.DialTimeout("unix", s, 5*time.Second)
		if err != nil {
			a.fail(s, err)
			continue
		}
		c.Close()
		a.win(s, "connected")
	}
	return a.result()
}

// procStrings reads /proc/PID/FILE, a NUL-separated list.
func procStrings(pid int, file string) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// parentOf reads a process's parent from /proc/PID/stat (0 if gone).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// ancestors are pid's parent, its parent's, and so on up to the first
// process it can see.
func ancestors(pid int) []int {
	var out []int
	for p := parentOf(pid); p > 0 && !slices.Contains(out, p) && len(out) < 64; p = parentOf(p) {
		out = append(out, p)
	}
	return out
}

// allPIDs lists the processes /proc shows.
func allPIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// seeProcesses looks in /proc for processes that are neither the agent's
// ancestors nor its descendants.
func seeProcesses() AttackResult {
	a := &attempt{name: AttackSeeProcesses}
	pids, err := allPIDs()
	if err != nil {
		a.fail("/proc", err)
		return a.result()
	}
	self := os.Getpid()
	own := append(ancestors(self), self)
	var others []string
	for _, pid := range pids {
		if slices.Contains(own, pid) {
			continue
		}
		chain := ancestors(pid)
		if slices.Contains(chain, self) {
			continue // a descendant
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			continue // gone meanwhile
		}
		argv := procStrings(pid, "cmdline")
		name := "[kernel]"
		if len(argv) > 0 {
			name = filepath.Base(argv[0])
		}
		others = append(others, fmt.Sprintf("%d %s", pid, name))
	}
	if len(others) == 0 {
		a.fail("/proc", fmt.Errorf("only my own tree: %d processes", len(own)))
		return a.result()
	}
	a.win("/proc", fmt.Sprintf("%d processes outside my tree, e.g. %s", len(others), strings.Join(others[:min(len(others), 6)], ", ")))
	return a.result()
}

// seePIDs looks for the given processes (tetherd's) in /proc.
func seePIDs(pids []int) AttackResult {
	a := &attempt{name: AttackSeePIDs}
	for _, pid := range pids {
		target := fmt.Sprintf("pid %d", pid)
		if pid == os.Getpid() {
			a.fail(target, errors.New("that is me"))
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			a.fail(target, err)
			continue
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		a.win(target, fmt.Sprintf("its command line: %.120s", cmd))
	}
	return a.result()
}
