package main

// The hosts part (-only hosts, issue 13): executor hosts on the real
// tetherd binary and demo agent, in child processes. It measures
//
//   - restart: -hosts-sessions detached sessions streaming slowly
//     (-hosts-stream), an SSE client on each; kill -9 tetherd and start it
//     again at once on the same address. Figures are from the new
//     process's start (fork/exec) until each client received a chunk the
//     new daemon committed — one after the session's executor_status
//     "reconnecting", which the new daemon's start-up reconciliation writes
//     before it listens — and the longest silence a client saw between two
//     chunks across the restart;
//   - overhead (hostsload.go): the same workloads through --executor
//     standalone and --executor detached in the same round: CPU per chunk
//     of the daemon, the host and the agents, throughput, and agent →
//     client latency of paced /stamped chunks;
//   - RSS (hostsload.go) of the host with -hosts-idle idle sessions.
//
// Every process it starts (daemons, hosts, agents) is killed before it
// returns.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hostsConfig are the hosts part's settings (flags: hostsFlags).
type hostsConfig struct {
	Sessions int           // restart: detached sessions mid-turn at each kill -9
	Stream   string        // restart: the prompt they stream
	Retry    time.Duration // restart: a client's reconnect interval while the daemon is down
	Rounds   int
	Chunks   int    // overhead: chunks per session of the full-speed runs
	Parallel int    // overhead: sessions of the "a few at once" runs
	Paced    string // overhead: N EVERY MS of the paced /stamped runs
	Idle     int    // rss: idle sessions
	Parts    string // which of restart, overhead, rss
	// BaselineBin, if set, is another tetherd (e.g. main's) whose detached
	// runtime also runs the overhead workloads in every round.
	BaselineBin string
	Keep        bool
	Logf        func(format string, args ...any)
}

// hostsFlags registers the hosts part's flags on the command line.
func hostsFlags() *hostsConfig {
	c := &hostsConfig{}
	flag.IntVar(&c.Sessions, "hosts-sessions", 100, "hosts: detached sessions streaming through each kill -9")
	flag.StringVar(&c.Stream, "hosts-stream", "/stream 1000000 1 100", "hosts: what those sessions stream (demo agent: N chunks, a pause of MS ms after every EVERY)")
	flag.DurationVar(&c.Retry, "hosts-retry", 20*time.Millisecond, "hosts: how often a client retries while the daemon is down")
	flag.IntVar(&c.Rounds, "hosts-rounds", 3, "hosts: rounds of each measurement (median reported)")
	flag.IntVar(&c.Chunks, "hosts-chunks", 10000, "hosts: chunks per session of the full-speed overhead runs")
	flag.IntVar(&c.Parallel, "hosts-parallel", 4, "hosts: sessions streaming at once in the overhead runs of a few sessions")
	flag.StringVar(&c.Paced, "hosts-paced", "2000 1 2", "hosts: N EVERY MS of the paced /stamped latency runs")
	flag.IntVar(&c.Idle, "hosts-idle", 10, "hosts: idle sessions for the RSS figure")
	flag.StringVar(&c.Parts, "hosts-parts", "restart,overhead,rss", "hosts: which measurements to run")
	flag.StringVar(&c.BaselineBin, "hosts-baseline-bin", "", "hosts: another tetherd binary whose detached runtime also runs the overhead workloads, for a same-run ratio (its demo agent needs /stamped)")
	flag.BoolVar(&c.Keep, "hosts-keep", false, "hosts: keep the temp dir (data dirs, daemon logs)")
	return c
}

// hostsResult is the whole part's outcome.
type hostsResult struct {
	Cfg      hostsConfig
	Bin      string
	Restart  []hostRestartRound
	Checks   string      // restart: what the clients saw over all rounds
	Overhead [][]loadRun // per round: every workload on both executors
	RSS      [][]rssRun  // per round: both executors
	Loads    []string
}

// hostBench is the run's state; rb supplies launching, the API and
// clean-up, as for the restart part.
type hostBench struct {
	cfg hostsConfig
	rb  *restartRun
	res *hostsResult
}

func (hb *hostBench) load(what string) {
	l := loadavg()
	hb.res.Loads = append(hb.res.Loads, what+": "+l)
	hb.cfg.Logf("hosts: %s, loadavg %s", what, l)
}

// hostsBench runs the parts cfg.Parts names.
func hostsBench(ctx context.Context, cfg hostsConfig) (res hostsResult, err error) {
	res.Cfg = cfg
	if cfg.Sessions <= 0 || cfg.Rounds <= 0 || cfg.Chunks <= 0 || cfg.Parallel <= 0 || cfg.Idle <= 0 {
		return res, fmt.Errorf("hosts: -hosts-sessions, -hosts-rounds, -hosts-chunks, -hosts-parallel and -hosts-idle must be positive")
	}
	rb, done, err := newRun("hosts", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	hb := &hostBench{cfg: cfg, rb: rb, res: &res}
	hb.load("start")
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	res.Bin = rb.bin
	parts := map[string]bool{}
	for _, p := range strings.Split(cfg.Parts, ",") {
		parts[strings.TrimSpace(p)] = true
	}
	if parts["restart"] {
		if err := hb.restart(ctx); err != nil {
			return res, fmt.Errorf("hosts restart: %w", err)
		}
	}
	for round := range cfg.Rounds {
		if parts["overhead"] {
			runs, err := hb.overhead(ctx, round)
			if err != nil {
				return res, fmt.Errorf("hosts overhead, round %d: %w", round+1, err)
			}
			res.Overhead = append(res.Overhead, runs)
		}
		if parts["rss"] {
			var rs []rssRun
			for _, x := range []string{"standalone", "detached"} {
				r, err := hb.rss(ctx, x, round)
				if err != nil {
					return res, fmt.Errorf("hosts rss, %s, round %d: %w", x, round+1, err)
				}
				rs = append(rs, r)
			}
			res.RSS = append(res.RSS, rs)
		}
		if parts["overhead"] || parts["rss"] {
			hb.load(fmt.Sprintf("overhead/rss round %d done", round+1))
		}
	}
	hb.load("end")
	return res, nil
}

// hostRestartRound is one kill -9 and restart with every session
// streaming. Times are from the new process's start.
type hostRestartRound struct {
	Load        string
	KillToStart time.Duration // SIGKILL sent → the new process started
	Health      time.Duration // → first 200 from /health
	Reconnected time.Duration // → the last client's stream answered 200
	ResumedP50  time.Duration // → a client's first chunk of the new daemon, median
	ResumedAll  time.Duration // → the last client's (every session streams again)
	Resumed     int
	MaxGap      time.Duration // longest silence between two chunks a client saw
	Reconciled  string        // the daemon's "reconciled sessions" line
}

// follower is one session's SSE client in the restart part: it
// reconnects with Last-Event-ID whenever its stream ends, and checks the
// stream stays gapless and free of duplicates.
type follower struct {
	mu                      sync.Mutex
	lastSeq                 int64
	lastID                  string
	chunks                  int
	lastChunk               time.Time
	gaps, dups, interrupted int
	// armed: a round is being measured; the fields below belong to it.
	armed                bool
	sawReconnecting      bool
	reconnected, resumed time.Time
	maxGap               time.Duration
}

func (f *follower) run(ctx context.Context, client *http.Client, base *atomic.Value, sid string, retry time.Duration) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base.Load().(string)+"/session/"+sid+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
		f.mu.Lock()
		if f.lastID != "" {
			req.Header.Set("Last-Event-ID", f.lastID)
		}
		f.mu.Unlock()
		resp, err := client.Do(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			f.mu.Lock()
			if f.armed && f.reconnected.IsZero() {
				f.reconnected = time.Now()
			}
			f.mu.Unlock()
			_ = readFrames(resp.Body, f.frame)
		}
		if err == nil {
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

func (f *follower) frame(fr *sseFrame, now time.Time) bool {
	if fr.Event == "stream_lagged" {
		return false // reconnect from the cursor
	}
	if fr.Seq == 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fr.Seq <= f.lastSeq {
		f.dups++
		return true
	}
	if f.lastSeq > 0 && fr.Seq != f.lastSeq+1 {
		f.gaps++
	}
	f.lastSeq, f.lastID = fr.Seq, fr.ID
	switch fr.Event {
	case "message.chunk":
		if f.armed {
			if !f.lastChunk.IsZero() {
				f.maxGap = max(f.maxGap, now.Sub(f.lastChunk))
			}
			if f.sawReconnecting && f.resumed.IsZero() {
				f.resumed = now
			}
		}
		f.lastChunk = now
		f.chunks++
	case "session.executor_status":
		if f.armed && strings.Contains(string(fr.Data), `"status":"reconnecting"`) {
			f.sawReconnecting = true
		}
	case "turn.interrupted":
		f.interrupted++
	}
	return true
}

// arm starts measuring a round; disarm ends it.
func (f *follower) arm() {
	f.mu.Lock()
	f.armed, f.sawReconnecting, f.reconnected, f.resumed, f.maxGap = true, false, time.Time{}, time.Time{}, 0
	f.mu.Unlock()
}

func (f *follower) disarm() {
	f.mu.Lock()
	f.armed = false
	f.mu.Unlock()
}

var hostReconcileRE = regexp.MustCompile(`msg="reconciled sessions" ([^\n]*)`)

// restart measures cfg.Rounds restarts of one daemon whose sessions keep
// streaming through all of them.
func (hb *hostBench) restart(ctx context.Context) error {
	rb, cfg := hb.rb, hb.cfg
	dir := filepath.Join(rb.root, "restart")
	addr, err := freeLoopback()
	if err != nil {
		return err
	}
	detached := []string{"--executor", "detached"}
	p, err := rb.launchAt(dir, addr, "restart-prep", detached...)
	if err != nil {
		return err
	}
	defer func() { rb.sweep(dir) }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return err
	}
	ids := make([]string, cfg.Sessions)
	if err := parallel(ctx, 0, len(ids), 8, func(ctx context.Context, i int) error {
		var err error
		ids[i], err = rb.createFinished(ctx, p, i)
		return err
	}); err != nil {
		return fmt.Errorf("create sessions: %w (log %s)", err, p.logPath)
	}
	var sess struct {
		Executor struct{ Runtime string } `json:"executor"`
	}
	if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+ids[0], nil, &sess); err != nil || sess.Executor.Runtime != "detached" {
		return fmt.Errorf("session %s: runtime %q (%v), want detached", ids[0], sess.Executor.Runtime, err)
	}
	var base atomic.Value
	base.Store(p.base)
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	fs := make([]*follower, len(ids))
	client := newClient()
	for i, sid := range ids {
		fs[i] = &follower{}
		wg.Go(func() { fs[i].run(fctx, client, &base, sid, cfg.Retry) })
	}
	if err := parallel(ctx, 0, len(ids), 8, func(ctx context.Context, i int) error {
		_, err := rb.api(ctx, p, http.MethodPost, "/session/"+ids[i]+"/prompt", map[string]any{"prompt": textPrompt(cfg.Stream), "promptId": "stream"}, nil)
		return err
	}); err != nil {
		return err
	}
	hb.load(fmt.Sprintf("restart: %d sessions streaming", len(ids)))
	for round := range cfg.Rounds {
		if err := waitStreaming(ctx, fs, 30*time.Second); err != nil {
			return fmt.Errorf("round %d: %w (log %s)", round+1, err, p.logPath)
		}
		time.Sleep(time.Second)
		r := hostRestartRound{Load: loadavg()}
		for _, f := range fs {
			f.arm()
		}
		kill := time.Now()
		p.kill9()
		if p, err = rb.launchAt(dir, addr, fmt.Sprintf("restart-%d", round+1), detached...); err != nil {
			return err
		}
		r.KillToStart = p.started.Sub(kill)
		health := make(chan time.Duration, 1)
		go func() { d, _ := rb.waitHealthy(ctx, p); health <- d }()
		end := time.Now().Add(60 * time.Second)
		for resumedCount(fs) < len(fs) && time.Now().Before(end) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // the burst after the gap, inside the round
		r.Health = <-health
		var resumed []time.Duration
		for _, f := range fs {
			f.mu.Lock()
			if !f.reconnected.IsZero() {
				r.Reconnected = max(r.Reconnected, f.reconnected.Sub(p.started))
			}
			if !f.resumed.IsZero() {
				resumed = append(resumed, f.resumed.Sub(p.started))
			}
			r.MaxGap = max(r.MaxGap, f.maxGap)
			f.mu.Unlock()
			f.disarm()
		}
		r.Resumed, r.ResumedP50 = len(resumed), medianDur(resumed)
		for _, d := range resumed {
			r.ResumedAll = max(r.ResumedAll, d)
		}
		if m := hostReconcileRE.FindSubmatch([]byte(tail(p.logPath))); m != nil {
			r.Reconciled = string(m[1])
		}
		hb.res.Restart = append(hb.res.Restart, r)
		cfg.Logf("hosts: restart round %d: %+v", round+1, r)
		if r.Resumed < len(fs) {
			return fmt.Errorf("round %d: %d of %d sessions streamed again within 60 s (log %s)", round+1, r.Resumed, len(fs), p.logPath)
		}
	}
	var chunks, gaps, dups, interrupted int
	for _, f := range fs {
		f.mu.Lock()
		chunks, gaps, dups, interrupted = chunks+f.chunks, gaps+f.gaps, dups+f.dups, interrupted+f.interrupted
		f.mu.Unlock()
	}
	hb.res.Checks = fmt.Sprintf("%d chunks received over all rounds; turn.interrupted %d, gaps in seq %d, duplicates %d", chunks, interrupted, gaps, dups)
	return p.term()
}

// waitStreaming waits until every follower received a chunk in the last
// second.
func waitStreaming(ctx context.Context, fs []*follower, limit time.Duration) error {
	end := time.Now().Add(limit)
	for {
		behind := 0
		for _, f := range fs {
			f.mu.Lock()
			if f.lastChunk.IsZero() || time.Since(f.lastChunk) > time.Second {
				behind++
			}
			f.mu.Unlock()
		}
		if behind == 0 {
			return nil
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d sessions not streaming after %s", behind, len(fs), limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func resumedCount(fs []*follower) int {
	n := 0
	for _, f := range fs {
		f.mu.Lock()
		if !f.resumed.IsZero() {
			n++
		}
		f.mu.Unlock()
	}
	return n
}

func printHosts(r hostsResult) {
	c := r.Cfg
	fmt.Printf("Executor hosts: real tetherd (%s) and demo agents in child processes.\n", r.Bin)
	if len(r.Restart) > 0 {
		fmt.Printf("Restart: %d detached sessions streaming %q, an SSE client on each (reconnecting every %s with Last-Event-ID while the daemon is down); kill -9 tetherd, start it again at once on the same address.\n",
			c.Sessions, c.Stream, c.Retry)
		fmt.Println("Times from the new process's start. streams again = the client received a chunk the new daemon committed (after the session's executor_status \"reconnecting\"); gap = longest silence between two chunks a client saw across the restart.")
		w := table()
		fmt.Fprintln(w, "round\tloadavg\tkill→start ms\t/health ms\tall reconnected ms\tstreams again p50 ms\tevery session ms\tlongest gap ms\treconciled (daemon log)\t")
		var every, gaps, p50s, healths []time.Duration
		for i, x := range r.Restart {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, x.Load, msf(x.KillToStart), msf(x.Health), msf(x.Reconnected),
				msf(x.ResumedP50), msf(x.ResumedAll), msf(x.MaxGap), x.Reconciled)
			every, gaps, p50s, healths = append(every, x.ResumedAll), append(gaps, x.MaxGap), append(p50s, x.ResumedP50), append(healths, x.Health)
		}
		fmt.Fprintf(w, "median\t\t\t%s\t\t%s\t%s\t%s\t\t\n", msf(medianDur(healths)), msf(medianDur(p50s)), msf(medianDur(every)), msf(medianDur(gaps)))
		w.Flush()
		fmt.Printf("every session streams again: median %s ms; goal ≤ 1 s: %s. %s\n\n", msf(medianDur(every)), metStr(medianDur(every) <= time.Second), r.Checks)
	}
	printOverhead(r)
	printSideBySide(r)
	printRSS(r)
	fmt.Println("/proc/loadavg:")
	for _, l := range r.Loads {
		fmt.Println("  " + l)
	}
	fmt.Println()
}
