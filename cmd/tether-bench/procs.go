package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The agent processes a bench's daemons started, found through /proc, and
// their sweep: no bench leaves a process behind.

// agentProcs lists live (non-zombie) processes whose command line
// mentions dir — every demo agent of a data dir does (--state-dir
// <dir>/demo-agent), and so does its daemon.
func agentProcs(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !(bytes.Contains(cmdline, []byte(dir+"/")) || bytes.Contains(cmdline, []byte(dir+"\x00"))) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// procCPU is a process's utime+stime so far (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+1:])) // field 3 (state) is f[0]; utime is field 14, stime 15
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// liveGroups is the set of process groups with a member that is not a
// zombie (a killed group stays signalable until its zombies are reaped).
func liveGroups() map[int]bool {
	ents, _ := os.ReadDir("/proc")
	out := map[int]bool{}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state ppid pgrp ...
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pgid, err := strconv.Atoi(f[2]); err == nil {
			out[pgid] = true
		}
	}
	return out
}

// killAgents SIGKILLs the process groups of every process mentioning dir
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
