package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Ingest on one PostgreSQL with one node and with three (issue 15: "report
// the ratio and where it saturates"). Each level floods that many fresh
// sessions at once, spread over the nodes, and measures the events
// committed per second with where the CPU went: the machine's busy share
// (all cores) and PostgreSQL's share of it, read from /proc. Where the
// machine is busy throughout, the rate is the machine's limit, not the
// design's.

// ingestKey names one series: a node count and a level.
type ingestKey struct{ Nodes, Sessions int }

// ingestRun is one level's measurement.
type ingestRun struct {
	Rate      float64 // events committed per second
	Busy      float64 // the machine's CPU busy share, 0..1 of all cores
	PG        float64 // PostgreSQL's processes' share of all cores
	PerCommit float64 // events per committed transaction of the database
	LockWait  float64 // backends waiting for a lock, on average (sampled), but for...
	FeedWait  float64 // ...feeds waiting for a writer's commit (the event horizon's advisory lock)
}

// ingestRound runs every level on a fresh cluster of n nodes.
func ingestRound(ctx context.Context, rb *restartRun, admin, name string, n int, cfg clusterConfig, res *clusterResult) error {
	c, err := newBenchCluster(ctx, rb, admin, name, cfg.TTL, n)
	if err != nil {
		return err
	}
	defer c.stop()
	next := 0 // sessions of earlier levels stay, idle
	for _, level := range cfg.Levels {
		run, err := c.ingest(ctx, cfg.Flood, next, level)
		if err != nil {
			return err
		}
		next += level
		k := ingestKey{n, level}
		res.Ingest[k] = append(res.Ingest[k], run)
		cfg.Logf("cluster: ingest with %d nodes, %d sessions: %.0f events/s, CPU %.0f%% busy (PostgreSQL %.0f%%), %.0f events a commit, %.2f backends waiting for a lock",
			n, level, run.Rate, 100*run.Busy, 100*run.PG, run.PerCommit, run.LockWait)
		cfg.Logf("cluster: ... and %.2f feeds waiting for a writer's commit", run.FeedWait)
	}
	return nil
}

// ingest floods level new sessions (numbered from first) spread over the
// nodes, and measures until every turn ended.
func (c *benchCluster) ingest(ctx context.Context, flood string, first, level int) (ingestRun, error) {
	type one struct {
		p   *tetherdProc
		sid string
	}
	var all []one
	for i := range level {
		p := c.nodes[(first+i)%len(c.nodes)]
		sid, err := c.rb.createFinishedOn(ctx, p, first+i, "standalone")
		if err != nil {
			return ingestRun{}, err
		}
		all = append(all, one{p, sid})
	}
	before, err := c.eventCount(ctx)
	if err != nil {
		return ingestRun{}, err
	}
	x0, err := c.commits(ctx)
	if err != nil {
		return ingestRun{}, err
	}
	waits := c.sampleLockWaits(ctx)
	m0, pg0, start := machineCPU(), postgresCPU(), time.Now()
	err = parallel(ctx, 0, len(all), len(all), func(ctx context.Context, i int) error {
		o := all[i]
		if _, err := c.rb.api(ctx, o.p, http.MethodPost, "/session/"+o.sid+"/prompt",
			map[string]any{"prompt": textPrompt(flood), "promptId": "flood"}, nil); err != nil {
			return err
		}
		return c.rb.waitTurn(ctx, o.p, o.sid, "flood", func(s string) (bool, error) { return s == "completed", nil })
	})
	if err != nil {
		return ingestRun{}, err
	}
	wall := time.Since(start)
	m1, pg1 := machineCPU(), postgresCPU()
	run := ingestRun{}
	run.LockWait, run.FeedWait = waits()
	after, err := c.eventCount(ctx)
	if err != nil {
		return ingestRun{}, err
	}
	x1, err := c.commits(ctx)
	if err != nil {
		return ingestRun{}, err
	}
	run.Rate = float64(after-before) / wall.Seconds()
	if x1 > x0 {
		run.PerCommit = float64(after-before) / float64(x1-x0)
	}
	if total := m1.total - m0.total; total > 0 {
		run.Busy = float64(m1.busy-m0.busy) / float64(total)
		run.PG = float64(pg1-pg0) / float64(total)
	}
	return run, nil
}

func (c *benchCluster) eventCount(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM events`).Scan(&n)
	return n, err
}

// commits is the database's committed transactions so far (the
// statistics collector's count, flushed at least every second: read it
// after the turns ended).
func (c *benchCluster) commits(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	time.Sleep(1100 * time.Millisecond) // backends report their counts at most once a second
	var n int64
	err = conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	return n, err
}

// sampleLockWaits counts, every 10 ms until the returned func is called,
// the database's backends waiting for a lock: feeds waiting on a writer's
// commit (the advisory lock of store.EventHorizon, which only readers
// wait on) apart from the rest (writers queuing on one another, as they
// did on the counter row global ids came from before the sequence); the
// func returns the means.
func (c *benchCluster) sampleLockWaits(ctx context.Context) func() (locks, feeds float64) {
	conn, err := pgx.Connect(ctx, c.db)
	if err != nil {
		return func() (float64, float64) { return 0, 0 }
	}
	stop, done := make(chan struct{}), make(chan [2]float64, 1)
	go func() {
		defer conn.Close(context.Background())
		var locks, feeds, n int64
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				done <- [2]float64{float64(locks) / float64(max(n, 1)), float64(feeds) / float64(max(n, 1))}
				return
			case <-t.C:
			}
			var l, f int64
			if conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE wait_event <> 'advisory'), count(*) FILTER (WHERE wait_event = 'advisory')
				FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&l, &f) == nil {
				locks, feeds, n = locks+l, feeds+f, n+1
			}
		}
	}()
	return func() (float64, float64) {
		close(stop)
		r := <-done
		return r[0], r[1]
	}
}

// cpuTicks is the machine's CPU time so far, in clock ticks summed over
// its cores: busy, and in all.
type cpuTicks struct{ busy, total int64 }

// machineCPU reads the first line of /proc/stat (user nice system idle
// iowait irq softirq steal ...).
func machineCPU() cpuTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	var t cpuTicks
	for i := 1; i < len(f) && i <= 8; i++ {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		t.total += v
		if i != 4 && i != 5 { // idle, iowait
			t.busy += v
		}
	}
	return t
}

// postgresCPU is the CPU time of the local PostgreSQL server so far, in
// clock ticks: every live process named postgres, with the time of the
// ended backends the postmaster reaped (cutime, cstime). 0 for a server
// on another machine.
func postgresCPU() int64 {
	var sum int64
	allProcStats(func(st procStat) {
		if st.Comm == "postgres" {
			sum += st.ticks(11, 15)
		}
	})
	return sum
}

// printIngest prints each level's median rate and CPU, one node against
// three.
func printIngest(r clusterResult) {
	fmt.Printf("Ingest (%q per session, standalone runtime), median of %d rounds; CPU: share of all %d cores busy, PostgreSQL's part.\n",
		r.Cfg.Flood, r.Cfg.Rounds, cores())
	w := table()
	fmt.Fprintln(w, "sessions\tnodes\tevents/s\tCPU busy / PG\tevents a commit\tlock waiters\tfeeds waiting\t3 / 1\trounds\t")
	for _, level := range r.Cfg.Levels {
		r1 := medianF(rates(r.Ingest[ingestKey{1, level}]))
		for _, n := range []int{1, 3} {
			runs := r.Ingest[ingestKey{n, level}]
			rate, vs := medianF(rates(runs)), ""
			if n == 3 {
				vs = ratio(rate, r1)
			}
			fmt.Fprintf(w, "%d\t%d\t%.0f\t%s\t%.0f\t%.2f\t%.2f\t%s\t%s\t\n", level, n, rate, cpuShare(runs),
				medianF(field(runs, func(r ingestRun) float64 { return r.PerCommit })),
				medianF(field(runs, func(r ingestRun) float64 { return r.LockWait })),
				medianF(field(runs, func(r ingestRun) float64 { return r.FeedWait })), vs, floats(rates(runs)))
		}
	}
	w.Flush()
}

func rates(runs []ingestRun) []float64 {
	return field(runs, func(r ingestRun) float64 { return r.Rate })
}

func field(runs []ingestRun, f func(ingestRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

// cpuShare is the median busy and PostgreSQL shares, in percent.
func cpuShare(runs []ingestRun) string {
	busy, pg := make([]float64, len(runs)), make([]float64, len(runs))
	for i, r := range runs {
		busy[i], pg[i] = 100*r.Busy, 100*r.PG
	}
	return fmt.Sprintf("%.0f%% / %.0f%%", medianF(busy), medianF(pg))
}

// cores is the number of CPUs /proc/stat counts.
func cores() int {
	b, _ := os.ReadFile("/proc/stat")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			n++
		}
	}
	return n
}

// intList parses "1,3,6": positive integers.
func intList(v string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", v)
		}
		out = append(out, n)
	}
	return out, nil
}
