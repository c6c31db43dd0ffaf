package main

import (
	"context"
	"fmt"
	"time"
)

// sideBySideName names the overhead round's latency run with both
// runtimes in one daemon.
const sideBySideName = "paced side by side"

// sideBySide measures the latency the host adds with a standalone and a
// detached session of one daemon streaming paced at the same time. Runs
// of the two runtimes one after the other each meet their own stalls of
// the machine (a WAL checkpoint, a busy neighbour): at 2,000 chunks a run
// the p99 is its 20th worst chunk, so one stall of 50 ms sets it, and
// standalone's own p99 moved from 1.4 to 35 ms between rounds of one
// run. Side by side both sessions meet the same stalls, and what differs
// is the host's hop. The run's CPU is not reported: one daemon serves
// both.
func (hb *hostBench) sideBySide(ctx context.Context, t *overheadTarget) (loadRun, error) {
	sid, err := hb.rb.createFinishedOn(ctx, t.p, len(t.ids), "detached")
	if err != nil {
		return loadRun{}, err
	}
	r, err := hb.rb.measureLoad(ctx, t.p, t.dir, []string{t.ids[0], sid}, "/stamped "+hb.cfg.Paced, "ab")
	if err != nil {
		return loadRun{}, err
	}
	r.Exec, r.Name = "standalone+detached", sideBySideName
	hb.cfg.Logf("hosts: side by side: standalone p99 %s, detached p99 %s", pctl(r.PerSession[0], 0.99), pctl(r.PerSession[1], 0.99))
	return r, nil
}

// printSideBySide reports the side-by-side runs: per round each session's
// p50 and p99, and the median over rounds of detached minus standalone.
func printSideBySide(r hostsResult) {
	var rows []loadRun
	for _, runs := range r.Overhead {
		for _, x := range runs {
			if x.Name == sideBySideName && len(x.PerSession) == 2 {
				rows = append(rows, x)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Printf("Latency side by side: one daemon (--executor standalone), a standalone and a detached session streaming /stamped %s at once; latency as above.\n", r.Cfg.Paced)
	w := table()
	fmt.Fprintln(w, "round\tstandalone p50 ms\tstandalone p99 ms\tdetached p50 ms\tdetached p99 ms\tp99 added ms\tloadavg\t")
	var added, added50 []float64
	for i, x := range rows {
		s, d := x.PerSession[0], x.PerSession[1]
		ms := func(q float64) float64 { return float64(pctl(d, q)-pctl(s, q)) / float64(time.Millisecond) }
		added, added50 = append(added, ms(0.99)), append(added50, ms(0.5))
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%.2f\t%s\t\n", i+1, msf(pctl(s, 0.5)), msf(pctl(s, 0.99)), msf(pctl(d, 0.5)), msf(pctl(d, 0.99)), ms(0.99),
			x.LoadBefore+" → "+x.LoadAfter)
	}
	w.Flush()
	fmt.Printf("side by side, median of the rounds: p99 added %.2f ms (%s), p50 added %.2f ms\n\n", medianF(added), metStr(medianF(added) <= 1), medianF(added50))
}
