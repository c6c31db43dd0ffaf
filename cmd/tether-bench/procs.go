package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tether/tether/internal/host"
)

// The agent processes a bench's daemons started, found through /proc, and
// their sweep: no bench leaves a process behind.

// agentProcs lists the live (non-zombie) processes of a data dir, or of
// the data dirs in it: those whose command line mentions dir — every
// demo agent of a data dir does (--state-dir <dir>/demo-agent), and so
// does its daemon — and the detached executor hosts (hostPIDs).
func agentProcs(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	self, hosts := os.Getpid(), hostPIDs(dir)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !(hosts[pid] || bytes.Contains(cmdline, []byte(dir+"/")) || bytes.Contains(cmdline, []byte(dir+"\x00"))) {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.zombie() {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// hostPIDs are the running detached executor hosts of dir and of the
// data dirs in it (<dir>/host, <dir>/*/host): a host's command line names
// no path, host.Running finds it by its directory.
func hostPIDs(dir string) map[int]bool {
	dirs, _ := filepath.Glob(filepath.Join(dir, "*", "host"))
	out := map[int]bool{}
	for _, d := range append(dirs, filepath.Join(dir, "host")) {
		if pid := host.Running(d); pid != 0 {
			out[pid] = true
		}
	}
	return out
}

// procStat is what /proc/<pid>/stat says of a process: its command name
// and the fields after it (field 3, the state, is Fields[0]; utime,
// stime, cutime and cstime are Fields[11:15]).
type procStat struct {
	Comm   string
	Fields []string
}

// readProcStat reads process pid's stat (false: gone, or unreadable).
func readProcStat(pid int) (procStat, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	return procStat{Comm: string(stat[open+1 : end]), Fields: strings.Fields(string(stat[end+1:]))}, true
}

// allProcStats calls fn with the stat of every process there is.
func allProcStats(fn func(procStat)) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if st, ok := readProcStat(pid); ok {
				fn(st)
			}
		}
	}
}

// zombie reports whether the process has ended and awaits its reaping.
func (st procStat) zombie() bool {
	return len(st.Fields) > 0 && (st.Fields[0] == "Z" || st.Fields[0] == "X")
}

// ticks sums the clock ticks of the fields [from, to) (utime 11, stime
// 12, cutime 13, cstime 14); 0 when the stat is short.
func (st procStat) ticks(from, to int) int64 {
	if len(st.Fields) < to {
		return 0
	}
	var sum int64
	for _, f := range st.Fields[from:to] {
		v, _ := strconv.ParseInt(f, 10, 64)
		sum += v
	}
	return sum
}

// procCPU is a process's utime+stime so far (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	st, _ := readProcStat(pid)
	return time.Duration(st.ticks(11, 13)) * 10 * time.Millisecond
}

// liveGroups is the set of process groups with a member that is not a
// zombie (a killed group stays signalable until its zombies are reaped).
func liveGroups() map[int]bool {
	out := map[int]bool{}
	allProcStats(func(st procStat) {
		if len(st.Fields) < 3 || st.zombie() {
			return
		}
		if pgid, err := strconv.Atoi(st.Fields[2]); err == nil { // state ppid pgrp ...
			out[pgid] = true
		}
	})
	return out
}

// killAgents SIGKILLs the process groups of every process of dir (agentProcs)
// and waits until they are gone; it returns how many there were.
func (rb *restartRun) killAgents(dir string) (int, error) {
	pids := agentProcs(dir)
	for _, pid := range pids {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	end := time.Now().Add(20 * time.Second)
	for len(agentProcs(dir)) > 0 {
		if time.Now().After(end) {
			return len(pids), fmt.Errorf("processes of %s still alive 20s after SIGKILL: %v", dir, agentProcs(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return len(pids), nil
}

// sweep kills anything left that mentions dir.
func (rb *restartRun) sweep(dir string) {
	if n, _ := rb.killAgents(dir); n > 0 {
		rb.cfg.Logf("restart: killed %d leftover processes of %s", n, dir)
	}
}

// cleanup kills every daemon still running and every process that
// mentions the run's temp dir (agents, orphans).
func (rb *restartRun) cleanup() {
	rb.mu.Lock()
	procs := slices.Clone(rb.procs)
	rb.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			p.kill9()
		}
	}
	rb.sweep(rb.root)
}

// guardPIDs refuses to start a daemon whose reconciliation would signal a
// live process group that is not ours: pids in stale executor rows can be
// reused (pid_max is often 32768), and reconciliation kills -pid.
func guardPIDs(pids []int) error {
	groups := liveGroups()
	var live []int
	for _, pid := range pids {
		if groups[pid] {
			live = append(live, pid)
		}
	}
	if len(live) > 0 {
		return fmt.Errorf("stale executor pids %v now lead live process groups (pid reuse); a daemon started now would SIGTERM them — not starting it, rerun", live)
	}
	return nil
}
