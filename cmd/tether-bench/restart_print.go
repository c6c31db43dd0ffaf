package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// The restart bench's report.

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func healths(ts []restartTiming) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Health
	}
	return out
}

func durList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = msf(d)
	}
	return strings.Join(parts, ", ")
}

func printRestart(r restartResult) {
	c := r.Cfg
	fmt.Printf("Restart: real tetherd (%s) and demo agents in child processes; times from process start (fork/exec) to the first 200 from GET /health, polled every 5 ms.\n", r.Bin)
	fmt.Printf("Crashed data dir (prepared in %s, waves of ≤ %d live agents, %d creations at once): %s\n",
		r.PrepCrash.Round(time.Millisecond), c.Wave, c.Create, r.CrashState)
	w := table()
	fmt.Fprintln(w, "start\tdata dir\tmedian ms\truns ms\treconciled (daemon log)\t")
	row := func(name, dir string, ts []restartTiming) {
		var rec []string
		for _, t := range ts {
			if t.Reconciled.Found {
				rec = append(rec, fmt.Sprintf("%d/%d in %s", t.Reconciled.Sessions, t.Reconciled.Turns, t.Reconciled.Took))
			} else {
				rec = append(rec, "no log line")
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", name, dir, msf(medianDur(healths(ts))), durList(healths(ts)), strings.Join(rec, "; "))
	}
	row("after kill -9", fmt.Sprintf("%d sessions, %d mid-turn", c.Sessions, c.MidTurn), r.Crash)
	if len(r.BaseCrash) > 0 {
		row("after kill -9, baseline bin", "same, "+r.Cfg.BaselineBin, r.BaseCrash)
	}
	row("same again", "nothing to reconcile", r.Again)
	row("baseline", "empty", r.Empty)
	w.Flush()
	fmt.Println("(reconciled = sessions/interruptedTurns in the daemon's \"reconciled sessions\" line, and its took=)")
	mc, ma, me := medianDur(healths(r.Crash)), medianDur(healths(r.Again)), medianDur(healths(r.Empty))
	fmt.Printf("after kill -9 vs same again: %s; vs empty: %s; goal ≤ 400 ms (issue 12): %s\n", ratio(float64(mc), float64(ma)), ratio(float64(mc), float64(me)), metStr(mc <= 400*time.Millisecond))
	if len(r.BaseCrash) > 0 {
		fmt.Printf("after kill -9, baseline bin vs this one: %s\n", ratio(float64(medianDur(healths(r.BaseCrash))), float64(mc)))
	}
	for i, v := range r.Verified {
		fmt.Printf("round %d after kill -9: %s\n", i+1, v)
	}
	for i, v := range r.BaseCheck {
		fmt.Printf("round %d after kill -9, baseline bin: %s\n", i+1, v)
	}
	printInProc(r.InProc, c.CPUProfile)
	if len(r.Eager) > 0 {
		fmt.Printf("\nEager restore: --resume-on-start eager; data dir (prepared in %s): %s\n", r.PrepEager.Round(time.Millisecond), r.EagerState)
		fmt.Println("all = process start → the last session.resumed on GET /events (the actor holds the live agent before it emits it); running = isAgentRunning in GET /session/{id}/status afterwards.")
		w = table()
		fmt.Fprintln(w, "concurrency\t/health ms\tfirst ms\tall ms\tresumed\trunning\tstrategies\texecutor errors\treconciled\tdaemon CPU ms\tagents CPU ms (n)\tloadavg before → after\t")
		for _, e := range r.Eager {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d/%d in %s\t%d\t%d (%d)\t%s → %s\t\n", e.Conc, msf(e.Health), msf(e.First), msf(e.All), e.Resumed, e.Running,
				countsString(e.Strategies), e.Errors, e.Reconciled.Sessions, e.Reconciled.Turns, e.Reconciled.Took,
				e.DaemonCPU.Milliseconds(), e.AgentsCPU.Milliseconds(), e.Agents, e.LoadBefore, e.LoadAfter)
		}
		w.Flush()
		for _, e := range r.Eager {
			if e.Conc == 8 {
				fmt.Printf("concurrency 8: all %d running after %s; goal ≤ 5 s: %s\n", e.Running, e.All.Round(time.Millisecond), metStr(e.All <= 5*time.Second && e.Running == e.Resumed))
			}
		}
	}
	fmt.Println("\n/proc/loadavg:")
	for _, l := range r.Loads {
		fmt.Println("  " + l)
	}
	fmt.Println()
}

func metStr(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
