package main

// The sandbox part (-only sandbox, issue 31): what running agents in
// bubblewrap costs, on one tetherd binary started twice a round, once as
// it is (agents sandboxed, mode auto) and once with TETHER_BWRAP pointing
// at nothing, so that mode auto starts them unsandboxed. Both daemons run
// side by side for the round and take turns, so that both meet the same
// machine. It measures
//
//   - agent start: POST /session (demo agent, no prompt) sent → the
//     session's executor_status "ready" received on GET /events (the agent
//     answered initialize and session/new), -sandbox-sessions a round and
//     variant, one after the other, the variants alternating session by
//     session;
//   - CPU per streamed chunk: /stream -sandbox-chunks through one session
//     (measureLoad, as the hosts part's overhead: the daemon, the agent and
//     the processes around it).
//
// Every process it starts is killed before it returns.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// sandboxConfig are the sandbox part's settings (flags: sandboxFlags).
type sandboxConfig struct {
	Rounds   int
	Sessions int    // agent starts a round and variant
	Chunks   int    // chunks of the /stream run a round and variant
	Executor string // the daemons' --executor
	Keep     bool
	Logf     func(format string, args ...any)
}

// sandboxFlags registers the sandbox part's flags on the command line.
func sandboxFlags() *sandboxConfig {
	c := &sandboxConfig{}
	flag.IntVar(&c.Rounds, "sandbox-rounds", 3, "sandbox: rounds (median reported)")
	flag.IntVar(&c.Sessions, "sandbox-sessions", 20, "sandbox: agent starts a round and variant (sessions created one after the other)")
	flag.IntVar(&c.Chunks, "sandbox-chunks", 100000, "sandbox: chunks of the /stream run a round and variant (CPU per chunk)")
	flag.StringVar(&c.Executor, "sandbox-executor", "standalone", "sandbox: the daemons' --executor (standalone: agents are tetherd's children; detached: the host's)")
	flag.BoolVar(&c.Keep, "sandbox-keep", false, "sandbox: keep the temp dir (data dirs, daemon logs)")
	return c
}

// sandboxVariant is one of the two ways the binary runs.
type sandboxVariant struct {
	Name string
	Env  []string // added to the daemon's environment
	// Wrapped is what the executor's pid must be: bubblewrap (sandboxed)
	// or the agent itself.
	Wrapped bool
}

// sandboxVariants: the measured one first (ratios are first/second).
var sandboxVariants = []sandboxVariant{
	{Name: "sandboxed", Wrapped: true},
	{Name: "unsandboxed", Env: []string{"TETHER_BWRAP=/nonexistent"}},
}

// sandboxRun is one variant in one round.
type sandboxRun struct {
	Variant               string
	Starts                []time.Duration // POST sent → ready received
	Load                  loadRun
	LoadBefore, LoadAfter string
}

// sandboxResult is the whole part's outcome.
type sandboxResult struct {
	Cfg    sandboxConfig
	Bin    string
	Rounds [][]sandboxRun // per round, in sandboxVariants' order
	Loads  []string
}

// sandboxBench runs cfg.Rounds rounds.
func sandboxBench(ctx context.Context, cfg sandboxConfig) (res sandboxResult, err error) {
	res.Cfg = cfg
	if cfg.Rounds <= 0 || cfg.Sessions <= 0 || cfg.Chunks <= 0 {
		return res, fmt.Errorf("sandbox: -sandbox-rounds, -sandbox-sessions and -sandbox-chunks must be positive")
	}
	rb, done, err := newRun("sandbox", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	load := func(what string) {
		l := loadavg()
		res.Loads = append(res.Loads, what+": "+l)
		cfg.Logf("sandbox: %s, loadavg %s", what, l)
	}
	load("start")
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	res.Bin = rb.bin
	for round := range cfg.Rounds {
		runs, err := sandboxRound(ctx, rb, cfg, round)
		if err != nil {
			return res, fmt.Errorf("sandbox, round %d: %w", round+1, err)
		}
		res.Rounds = append(res.Rounds, runs)
		load(fmt.Sprintf("round %d done", round+1))
	}
	load("end")
	return res, nil
}

// sandboxTarget is one variant's daemon of a round.
type sandboxTarget struct {
	v     sandboxVariant
	dir   string
	p     *tetherdProc
	ready *readyWatch
	run   *sandboxRun
}

// sandboxRound starts both variants' daemons and measures them in turns:
// agent starts alternating session by session (which variant goes first
// alternating too), then the stream, in an order alternating by round.
func sandboxRound(ctx context.Context, rb *restartRun, cfg sandboxConfig, round int) ([]sandboxRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runs := make([]sandboxRun, len(sandboxVariants))
	var ts []*sandboxTarget
	defer func() {
		for _, t := range ts {
			_ = t.p.term()
			rb.sweep(t.dir)
		}
	}()
	for i, v := range sandboxVariants {
		t := &sandboxTarget{v: v, dir: filepath.Join(rb.root, fmt.Sprintf("round%d-%s", round+1, v.Name)), run: &runs[i]}
		t.run.Variant = v.Name
		rb.env = v.Env
		p, err := rb.launch(t.dir, v.Name, "--executor", cfg.Executor)
		rb.env = nil
		if err != nil {
			return nil, err
		}
		t.p = p
		ts = append(ts, t)
		if _, err := rb.waitHealthy(ctx, p); err != nil {
			return nil, err
		}
		if t.ready, err = watchReady(ctx, p); err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		// One start before measuring: the first pays for the page cache
		// and the daemon's lazy set-up, not for the sandbox.
		if _, err := t.start(ctx, rb, "warm-up"); err != nil {
			return nil, fmt.Errorf("%s: warm-up: %w (log %s)", v.Name, err, p.logPath)
		}
	}
	for i := range runs {
		runs[i].LoadBefore = loadavg()
	}
	for i := range cfg.Sessions {
		order := slices.Clone(ts)
		if (i+round)%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			d, err := t.start(ctx, rb, fmt.Sprintf("start %d", i))
			if err != nil {
				return nil, fmt.Errorf("%s: %w (log %s)", t.v.Name, err, t.p.logPath)
			}
			t.run.Starts = append(t.run.Starts, d)
		}
	}
	order := slices.Clone(ts)
	if round%2 == 1 {
		slices.Reverse(order)
	}
	for _, t := range order {
		sid, err := rb.createFinished(ctx, t.p, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (log %s)", t.v.Name, err, t.p.logPath)
		}
		r, err := rb.measureLoad(ctx, t.p, t.dir, []string{sid}, fmt.Sprintf("/stream %d", cfg.Chunks), "stream")
		if err != nil {
			return nil, fmt.Errorf("%s: stream: %w (log %s)", t.v.Name, err, t.p.logPath)
		}
		t.run.Load = r
		cfg.Logf("sandbox: round %d %s: starts p50 %s p90 %s; %d chunks in %s, CPU daemon %s agents %s (wrappers %s)", round+1, t.v.Name,
			pctl(t.run.Starts, 0.5), pctl(t.run.Starts, 0.9), r.Chunks, r.Wall.Round(time.Millisecond), r.Daemon, r.Agents, r.Wrap)
	}
	for i := range runs {
		runs[i].LoadAfter = loadavg()
	}
	return runs, nil
}

// start creates a session of the demo agent without a prompt and times
// it until its executor is ready; the session's agent stays running.
func (t *sandboxTarget) start(ctx context.Context, rb *restartRun, title string) (time.Duration, error) {
	var s struct {
		ID string `json:"id"`
	}
	t0 := time.Now()
	if _, err := rb.api(ctx, t.p, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": rb.cwd, "title": title}, &s); err != nil {
		return 0, err
	}
	st, err := t.ready.wait(ctx, s.ID, 60*time.Second)
	if err != nil {
		return 0, err
	}
	if st.Status != "ready" {
		return 0, fmt.Errorf("session %s: executor %s, want ready", s.ID, st.Status)
	}
	// The executor's pid is the process tetherd started: bubblewrap when
	// sandboxed, the agent itself when not.
	if wrapped := procRole(st.PID) == "bwrap"; wrapped != t.v.Wrapped {
		return 0, fmt.Errorf("session %s: executor pid %d is %q, want sandboxed=%v", s.ID, st.PID, procRole(st.PID), t.v.Wrapped)
	}
	return st.at.Sub(t0), nil
}

// execStatus is a session.executor_status event, as received.
type execStatus struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	PID       int    `json:"pid"`
	at        time.Time
}

// readyWatch follows a daemon's global stream of executor statuses and
// keeps, per session, the first that ends a start (ready, error,
// stopped) with the time it arrived.
type readyWatch struct {
	mu      sync.Mutex
	got     map[string]execStatus
	changed chan struct{} // closed and replaced on every new entry
	err     error
}

// watchReady subscribes to GET /events?types=session.executor_status
// and returns once the replay is over.
func watchReady(ctx context.Context, p *tetherdProc) (*readyWatch, error) {
	w := &readyWatch{got: map[string]execStatus{}, changed: make(chan struct{})}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/events?types=session.executor_status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET /events: HTTP %d", resp.StatusCode)
	}
	replayed := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		once := sync.OnceFunc(func() { close(replayed) })
		err := readFrames(resp.Body, func(fr *sseFrame, now time.Time) bool {
			switch fr.Event {
			case "replay_complete":
				once()
			case "session.executor_status":
				var s execStatus
				if json.Unmarshal(fr.Data, &s) == nil && (s.Status == "ready" || s.Status == "error" || s.Status == "stopped") {
					s.at = now
					w.add(s)
				}
			case "stream_lagged":
				w.fail(fmt.Errorf("GET /events: stream_lagged"))
				return false
			}
			return true
		})
		once()
		w.fail(fmt.Errorf("GET /events ended: %v", err))
	}()
	select {
	case <-replayed:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (w *readyWatch) add(s execStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.got[s.SessionID]; ok {
		return
	}
	w.got[s.SessionID] = s
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *readyWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// wait returns the session's first status that ended its start.
func (w *readyWatch) wait(ctx context.Context, sid string, limit time.Duration) (execStatus, error) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		w.mu.Lock()
		s, ok := w.got[sid]
		err, changed := w.err, w.changed
		w.mu.Unlock()
		switch {
		case ok:
			return s, nil
		case err != nil && ctx.Err() == nil:
			return s, err
		}
		select {
		case <-changed:
		case <-timer.C:
			return s, fmt.Errorf("session %s: executor not ready within %s", sid, limit)
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// medianOf is the median over rounds of one variant's figure.
func medianOf(r sandboxResult, variant int, f func(sandboxRun) float64) float64 {
	var xs []float64
	for _, runs := range r.Rounds {
		xs = append(xs, f(runs[variant]))
	}
	return medianF(xs)
}

func startMS(q float64) func(sandboxRun) float64 {
	return func(x sandboxRun) float64 { return float64(pctl(x.Starts, q)) / float64(time.Millisecond) }
}

func cpuPerChunk(x sandboxRun) float64 { return x.Load.perChunk(x.Load.total()) }

func printSandbox(r sandboxResult) {
	c := r.Cfg
	fmt.Printf("Sandbox: one tetherd (%s, --executor %s) started twice a round: sandboxed (bubblewrap, mode auto, the default) and unsandboxed (%s); both daemons up for the round, taking turns.\n",
		r.Bin, c.Executor, strings.Join(sandboxVariants[1].Env, " "))
	fmt.Printf("Agent start = POST /session (demo agent, no prompt) sent → executor_status \"ready\" received on GET /events; %d sessions a round and variant, one after the other, the variants alternating (after one warm-up start each).\n", c.Sessions)
	fmt.Printf("CPU = utime+stime of the daemon, the executor host (detached), the agent and the processes around it (bwrap) over /stream %d through one session, from before the prompt to 200 ms after the turn's end; lagged = streams the daemon cut for the bench's client falling behind (it resumed from its cursor).\n", c.Chunks)
	w := table()
	fmt.Fprintln(w, "round\tvariant\tstart p50 ms\tstart p90 ms\tstart max ms\tchunks\tlagged\twall ms\tchunks/s\tdaemon µs/chunk\thost µs/chunk\tagent µs/chunk\tof which bwrap\ttotal µs/chunk\tloadavg\t")
	var ratios, added []float64
	for i, runs := range r.Rounds {
		for _, x := range runs {
			l := x.Load
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", i+1, x.Variant, msf(pctl(x.Starts, 0.5)), msf(pctl(x.Starts, 0.9)),
				msf(pctl(x.Starts, 1)), l.Chunks, l.Lagged, msf(l.Wall), float64(l.Chunks)/l.Wall.Seconds(), l.perChunk(l.Daemon), l.perChunk(l.Host), l.perChunk(l.Agents), l.perChunk(l.Wrap),
				l.perChunk(l.total()), x.LoadBefore+" → "+x.LoadAfter)
		}
		ratios = append(ratios, cpuPerChunk(runs[0])/cpuPerChunk(runs[1]))
		added = append(added, startMS(0.5)(runs[0])-startMS(0.5)(runs[1]))
	}
	w.Flush()
	fmt.Printf("median of %d rounds:\n", len(r.Rounds))
	for i, v := range sandboxVariants {
		fmt.Printf("  %-11s  start p50 %.2f ms, p90 %.2f ms; CPU %.1f µs/chunk\n", v.Name, medianOf(r, i, startMS(0.5)), medianOf(r, i, startMS(0.9)), medianOf(r, i, cpuPerChunk))
	}
	diff := medianOf(r, 0, startMS(0.5)) - medianOf(r, 1, startMS(0.5))
	ratio := medianOf(r, 0, cpuPerChunk) / medianOf(r, 1, cpuPerChunk)
	fmt.Printf("sandboxed − unsandboxed agent start p50: %+.2f ms (median of per-round differences %+.2f ms); goal ≤ +50 ms: %s\n", diff, medianF(added), metStr(diff <= 50))
	fmt.Printf("sandboxed / unsandboxed CPU per chunk: %.3f× (median of per-round ratios %.3f×); goal ≤ 1.05×: %s\n", ratio, medianF(ratios), metStr(ratio <= 1.05))
	fmt.Println("/proc/loadavg:")
	for _, l := range r.Loads {
		fmt.Println("  " + l)
	}
	fmt.Println()
}
