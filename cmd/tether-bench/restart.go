package main

// The restart part (-only restart): the real tetherd binary and the real
// demo agent, in child processes, on data directories prepared through the
// HTTP API. It measures
//
//   - start-up after kill -9: process start → first 200 from GET /health
//     (reconciliation runs before the daemon listens) on a data dir with
//     -restart-sessions sessions, -restart-midturn of them mid-turn; the
//     same restart again (nothing left to reconcile) and on an empty data
//     dir as baselines, in the same run;
//   - eager restore: process start → every one of -eager-sessions
//     resumable sessions has its agent running (--resume-on-start eager),
//     per --resume-concurrency.
//
// Every process it starts (daemons and their agents, orphans included) is
// killed before it returns.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver the store uses; inspects prepared data dirs

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

// restartConfig are the restart part's settings (flags in main.go).
type restartConfig struct {
	Sessions  int   // sessions in the crashed data dir
	MidTurn   int   // of which mid-turn at the kill -9
	Wave      int   // live agents at once while preparing it
	Create    int   // concurrent session creations while preparing
	Rounds    int   // restart measurements (each on a fresh copy)
	Eager     int   // resumable sessions for the eager figure
	EagerConc []int // --resume-concurrency values
	Keep      bool  // keep the temp dir (data dirs, daemon logs)
	// CPUProfile, if set: reconciliation also runs in this process on
	// fresh copies, under a CPU profile (FILE: after kill -9, FILE.again:
	// nothing to reconcile).
	CPUProfile string
	// BaselineBin, if set, is another tetherd binary (e.g. main's) started
	// after kill -9 on its own copy in every round, right after this one:
	// a ratio from the same run, under the same load.
	BaselineBin string
	Logf        func(format string, args ...any)
}

// restartTiming is one daemon start.
type restartTiming struct {
	Health     time.Duration // process start → first 200 from /health
	Reconciled reconcileLine
}

// reconcileLine is the daemon's "reconciled sessions" log line.
type reconcileLine struct {
	Found           bool
	Sessions, Turns int
	Took            string
}

type eagerResult struct {
	Conc       int
	Health     time.Duration // process start → /health 200
	First      time.Duration // process start → first session.resumed
	All        time.Duration // process start → the last of the sessions resumed
	Resumed    int
	Running    int            // sessions whose status said isAgentRunning afterwards
	Strategies map[string]int // session.resumed strategy → count
	Errors     int            // executor_status error events seen
	Reconciled reconcileLine
	LoadBefore string
	LoadAfter  string
	// CPU used so far (utime+stime) by the daemon and by its agent
	// processes, read when the last session resumed.
	DaemonCPU, AgentsCPU time.Duration
	Agents               int
}

type restartResult struct {
	PrepCrash  time.Duration
	PrepEager  time.Duration
	CrashState string // what the crashed data dir holds
	EagerState string
	Crash      []restartTiming // after kill -9
	BaseCrash  []restartTiming // after kill -9, BaselineBin
	BaseCheck  []string        // per round: BaselineBin's interrupted turns check
	Again      []restartTiming // the same dir again
	Empty      []restartTiming // a fresh empty dir
	Verified   []string        // per round: interrupted turns check
	Eager      []eagerResult
	InProc     []inProcStart // in-process start-up steps (-restart-cpuprofile)
	Loads      []string      // /proc/loadavg at points of the run
	Bin        string
	Cfg        restartConfig
}

// restartBench runs the whole restart part.
func restartBench(ctx context.Context, cfg restartConfig) (res restartResult, err error) {
	res.Cfg = cfg
	if cfg.Sessions <= 0 || cfg.MidTurn <= 0 || cfg.MidTurn > cfg.Sessions || cfg.Wave <= 0 || cfg.Create <= 0 || cfg.Rounds <= 0 {
		return res, fmt.Errorf("restart: need 0 < -restart-midturn ≤ -restart-sessions and positive -restart-wave, -restart-create, -restart-rounds")
	}
	root, err := os.MkdirTemp("", "tether-bench-restart-")
	if err != nil {
		return res, err
	}
	rb := &restartRun{cfg: cfg, root: root, client: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, DisableCompression: true}, Timeout: 30 * time.Second}}
	defer func() {
		rb.cleanup()
		if cfg.Keep {
			fmt.Fprintf(os.Stderr, "tether-bench: restart data dirs and daemon logs kept in %s\n", root)
		} else {
			_ = os.RemoveAll(root)
		}
	}()
	load := func(what string) {
		l := loadavg()
		res.Loads = append(res.Loads, what+": "+l)
		cfg.Logf("restart: %s, loadavg %s", what, l)
	}
	load("start")
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	res.Bin = rb.bin

	// 1. The crashed data dir.
	t0 := time.Now()
	crashTmpl := filepath.Join(root, "crash-template")
	hung, err := rb.prepareCrash(ctx, crashTmpl)
	if err != nil {
		return res, fmt.Errorf("prepare crashed data dir: %w", err)
	}
	res.PrepCrash = time.Since(t0)
	var stale []int
	res.CrashState, stale = rb.describe(crashTmpl)
	load("crashed data dir prepared")

	// 2. Restart after the crash, the same again, an empty dir.
	for round := range cfg.Rounds {
		dir := filepath.Join(root, fmt.Sprintf("crash-%d", round+1))
		if err := copyTree(crashTmpl, dir); err != nil {
			return res, err
		}
		if err := guardPIDs(stale); err != nil {
			return res, err
		}
		d, t, err := rb.measureStart(ctx, dir, "crash")
		if err != nil {
			return res, err
		}
		check := rb.verifyInterrupted(ctx, d, hung)
		res.Verified = append(res.Verified, check)
		if err := d.term(); err != nil {
			return res, err
		}
		res.Crash = append(res.Crash, t)
		if cfg.BaselineBin != "" {
			bt, check, err := rb.measureBaseline(ctx, crashTmpl, round, stale, hung)
			if err != nil {
				return res, err
			}
			res.BaseCrash, res.BaseCheck = append(res.BaseCrash, bt), append(res.BaseCheck, check)
		}

		d, t, err = rb.measureStart(ctx, dir, "again")
		if err != nil {
			return res, err
		}
		if err := d.term(); err != nil {
			return res, err
		}
		res.Again = append(res.Again, t)

		empty := filepath.Join(root, fmt.Sprintf("empty-%d", round+1))
		d, t, err = rb.measureStart(ctx, empty, "empty")
		if err != nil {
			return res, err
		}
		if err := d.term(); err != nil {
			return res, err
		}
		res.Empty = append(res.Empty, t)
		rb.sweep(dir) // nothing should be left; make sure
		load(fmt.Sprintf("restart round %d done", round+1))
	}

	if cfg.CPUProfile != "" {
		if res.InProc, err = rb.profileReconcile(ctx, crashTmpl, stale); err != nil {
			return res, fmt.Errorf("in-process reconciliation: %w", err)
		}
		load("in-process reconciliation profiled")
	}

	// 3. Eager restore.
	if cfg.Eager > 0 && len(cfg.EagerConc) > 0 {
		t0 = time.Now()
		eagerTmpl := filepath.Join(root, "eager-template")
		ids, head, err := rb.prepareEager(ctx, eagerTmpl)
		if err != nil {
			return res, fmt.Errorf("prepare eager data dir: %w", err)
		}
		res.PrepEager = time.Since(t0)
		res.EagerState, stale = rb.describe(eagerTmpl)
		load("eager data dir prepared")
		for i, c := range cfg.EagerConc {
			dir := filepath.Join(root, fmt.Sprintf("eager-%d-c%d", i+1, c))
			if err := copyTree(eagerTmpl, dir); err != nil {
				return res, err
			}
			if err := guardPIDs(stale); err != nil {
				return res, err
			}
			r, err := rb.eager(ctx, dir, ids, head, c)
			if err != nil {
				return res, fmt.Errorf("eager restore, concurrency %d: %w", c, err)
			}
			res.Eager = append(res.Eager, r)
		}
	}
	load("end")
	return res, nil
}

// measureBaseline starts cfg.BaselineBin after kill -9 on a fresh copy of
// the crashed dir and checks the interrupted turns as for the measured
// binary.
func (rb *restartRun) measureBaseline(ctx context.Context, tmpl string, round int, stale []int, hung []string) (restartTiming, string, error) {
	dir := filepath.Join(rb.root, fmt.Sprintf("crash-%d-baseline", round+1))
	if err := copyTree(tmpl, dir); err != nil {
		return restartTiming{}, "", err
	}
	if err := guardPIDs(stale); err != nil {
		return restartTiming{}, "", err
	}
	bin := rb.bin
	rb.bin = rb.cfg.BaselineBin
	d, t, err := rb.measureStart(ctx, dir, "crash-baseline")
	rb.bin = bin
	if err != nil {
		return t, "", err
	}
	check := rb.verifyInterrupted(ctx, d, hung)
	if err := d.term(); err != nil {
		return t, "", err
	}
	rb.sweep(dir)
	return t, check, nil
}

// restartRun holds the run's shared state.
type restartRun struct {
	cfg    restartConfig
	root   string
	bin    string
	cwd    string // every session's working directory
	client *http.Client
	n      int // daemons started, for log names

	mu    sync.Mutex
	procs []*tetherdProc
}

// prepare finds or builds the tetherd binary and makes the sessions'
// working directory.
func (rb *restartRun) prepare(ctx context.Context) error {
	var err error
	if rb.bin, err = buildTetherd(ctx, rb.root); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(rb.root, "cwd"), 0o755); err != nil {
		return err
	}
	rb.cwd, _ = filepath.EvalSymlinks(filepath.Join(rb.root, "cwd"))
	return os.WriteFile(filepath.Join(rb.cwd, "README.md"), []byte("# bench fixture\n"), 0o644)
}

// buildTetherd returns $TETHERD_BIN or a fresh build of ./cmd/tetherd.
func buildTetherd(ctx context.Context, root string) (string, error) {
	if p := os.Getenv("TETHERD_BIN"); p != "" {
		return filepath.Abs(p)
	}
	bin := filepath.Join(root, "bin", "tetherd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/tether/tether/cmd/tetherd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/tetherd: %v\n%s", err, out)
	}
	return bin, nil
}

// tetherdProc is one `tetherd serve` child.
type tetherdProc struct {
	cmd     *exec.Cmd
	base    string
	dir     string
	logPath string
	started time.Time
	done    chan struct{}
}

func freeLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// launch starts `tetherd serve` on dir; its output goes to a log file the
// child writes itself (no copying goroutine in this process).
func (rb *restartRun) launch(dir, name string, extra ...string) (*tetherdProc, error) {
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	return rb.launchAt(dir, addr, name, extra...)
}

// launchAt is launch on a given address: a daemon restarted where its
// clients reconnect.
func (rb *restartRun) launchAt(dir, addr, name string, extra ...string) (*tetherdProc, error) {
	rb.n++
	logPath := filepath.Join(rb.root, "logs", fmt.Sprintf("%02d-%s.log", rb.n, name))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// No agent cap: a preparation wave keeps 100 agents alive at once,
	// more than --max-agents' default.
	args := append([]string{"serve", "--data-dir", dir, "--addr", addr, "--token", token, "--max-agents", "0", "--executor", "standalone"}, extra...)
	cmd := exec.Command(rb.bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = rb.root
	p := &tetherdProc{cmd: cmd, base: "http://" + addr, dir: dir, logPath: logPath, done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	rb.mu.Lock()
	rb.procs = append(rb.procs, p)
	rb.mu.Unlock()
	return p, nil
}

// waitHealthy polls GET /health every 5 ms and returns the time from
// process start to the first 200.
func (rb *restartRun) waitHealthy(ctx context.Context, p *tetherdProc) (time.Duration, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	end := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/health", nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		select {
		case <-p.done:
			return 0, fmt.Errorf("tetherd exited during start-up; log %s:\n%s", p.logPath, tail(p.logPath))
		case <-ctx.Done():
			return 0, ctx.Err()
		default:
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("tetherd not healthy within 60s (last error %v); log %s", err, p.logPath)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// term stops the daemon with SIGTERM (a clean stop) and waits.
func (p *tetherdProc) term() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("tetherd did not stop within 30s of SIGTERM (killed); log %s", p.logPath)
	}
}

// kill9 kills the daemon with SIGKILL and waits until it is reaped.
func (p *tetherdProc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

var reconcileRE = regexp.MustCompile(`msg="reconciled sessions" sessions=(\d+) interruptedTurns=(\d+) took=(\S+)`)

// reconciled reads the daemon's reconciliation log line.
func (p *tetherdProc) reconciled() reconcileLine {
	b, _ := os.ReadFile(p.logPath)
	m := reconcileRE.FindSubmatch(b)
	if m == nil {
		return reconcileLine{}
	}
	s, _ := strconv.Atoi(string(m[1]))
	t, _ := strconv.Atoi(string(m[2]))
	return reconcileLine{Found: true, Sessions: s, Turns: t, Took: string(m[3])}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// measureStart starts a daemon on dir and times it to /health; the daemon
// is left running.
func (rb *restartRun) measureStart(ctx context.Context, dir, name string, extra ...string) (*tetherdProc, restartTiming, error) {
	p, err := rb.launch(dir, name, extra...)
	if err != nil {
		return nil, restartTiming{}, err
	}
	d, err := rb.waitHealthy(ctx, p)
	if err != nil {
		p.kill9()
		return nil, restartTiming{}, err
	}
	t := restartTiming{Health: d, Reconciled: p.reconciled()}
	rb.cfg.Logf("restart: %-6s %s → /health 200 in %s (%+v)", name, filepath.Base(dir), d.Round(time.Microsecond), t.Reconciled)
	return p, t, nil
}

// api sends a request with the token; out (if non-nil) receives the JSON.
func (rb *restartRun) api(ctx context.Context, p *tetherdProc, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := rb.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %v", method, path, err)
		}
	} else if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp.StatusCode, nil
}

func textPrompt(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

type benchTurn struct {
	PromptID        string `json:"promptId"`
	State           string `json:"state"`
	InterruptReason string `json:"interruptReason"`
}

// createFinished creates a demo session with an initial prompt and waits
// until that first turn has completed (its agent then idles).
func (rb *restartRun) createFinished(ctx context.Context, p *tetherdProc, i int) (string, error) {
	return rb.createFinishedOn(ctx, p, i, "")
}

// createFinishedOn is createFinished on the given executor ("": the
// daemon's default).
func (rb *restartRun) createFinishedOn(ctx context.Context, p *tetherdProc, i int, executor string) (string, error) {
	var s struct {
		ID string `json:"id"`
	}
	body := map[string]any{"agentProfileId": "demo", "cwd": rb.cwd, "title": fmt.Sprintf("bench %d", i),
		"initialPrompt": textPrompt(fmt.Sprintf("/echo session %d ready", i)), "promptId": "p1"}
	if executor != "" {
		body["executor"] = executor
	}
	_, err := rb.api(ctx, p, http.MethodPost, "/session", body, &s)
	if err != nil {
		return "", err
	}
	return s.ID, rb.waitTurn(ctx, p, s.ID, "p1", func(state string) (bool, error) {
		switch state {
		case "completed":
			return true, nil
		case "failed", "cancelled", "interrupted":
			return false, fmt.Errorf("session %s: first turn %s", s.ID, state)
		}
		return false, nil
	})
}

// waitTurn polls a turn until done says so.
func (rb *restartRun) waitTurn(ctx context.Context, p *tetherdProc, sid, pid string, done func(string) (bool, error)) error {
	end := time.Now().Add(120 * time.Second)
	for {
		var t benchTurn
		code, err := rb.api(ctx, p, http.MethodGet, "/session/"+sid+"/turns/"+pid, nil, &t)
		if err == nil {
			ok, derr := done(t.State)
			if derr != nil || ok {
				return derr
			}
		} else if code != http.StatusNotFound {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("session %s turn %s: still %q after 120s", sid, pid, t.State)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// parallel runs f(i) for i in [from, to) on n workers; the first error wins.
func parallel(ctx context.Context, from, to, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	next.Store(int64(from))
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// prepareCrash builds the crashed data dir: sessions in waves of at most
// cfg.Wave live agents, each wave ended by a clean stop (SIGTERM) so the
// agents go away; the next start reconciles that wave (executor rows →
// stopped). The last wave holds the cfg.MidTurn sessions that get a /hang
// turn, and ends with kill -9 of the daemon and of its agents' process
// groups. It returns the mid-turn sessions.
func (rb *restartRun) prepareCrash(ctx context.Context, dir string) ([]string, error) {
	cfg := rb.cfg
	idle := cfg.Sessions - cfg.MidTurn
	var waves [][2]int
	for from := 0; from < idle; from += cfg.Wave {
		waves = append(waves, [2]int{from, min(from+cfg.Wave, idle)})
	}
	waves = append(waves, [2]int{idle, cfg.Sessions})
	ids := make([]string, cfg.Sessions)
	var stale []int // the previous wave's agents: their rows stay ready after a clean stop
	for wi, w := range waves {
		if err := guardPIDs(stale); err != nil {
			return nil, err
		}
		p, err := rb.launch(dir, fmt.Sprintf("prep-wave%d", wi+1))
		if err != nil {
			return nil, err
		}
		if _, err := rb.waitHealthy(ctx, p); err != nil {
			return nil, err
		}
		t0 := time.Now()
		err = parallel(ctx, w[0], w[1], cfg.Create, func(ctx context.Context, i int) error {
			id, err := rb.createFinished(ctx, p, i)
			ids[i] = id
			return err
		})
		if err != nil {
			p.kill9()
			return nil, fmt.Errorf("wave %d: %w (log %s)", wi+1, err, p.logPath)
		}
		rb.cfg.Logf("restart: prepare: wave %d/%d: %d sessions created and prompted in %s, loadavg %s", wi+1, len(waves),
			w[1]-w[0], time.Since(t0).Round(time.Millisecond), loadavg())
		if wi < len(waves)-1 {
			stale = agentProcs(dir)
			if err := p.term(); err != nil {
				return nil, err
			}
			rb.sweep(dir)
			continue
		}
		// Last wave: put a turn in flight in each, then crash.
		hung := ids[w[0]:w[1]]
		err = parallel(ctx, 0, len(hung), cfg.Create, func(ctx context.Context, i int) error {
			sid := hung[i]
			if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+sid+"/prompt",
				map[string]any{"prompt": textPrompt("/hang"), "promptId": "hang"}, nil); err != nil {
				return err
			}
			return rb.waitHanging(ctx, p, sid)
		})
		if err != nil {
			p.kill9()
			return nil, fmt.Errorf("hang turns: %w", err)
		}
		p.kill9()
		n, err := rb.killAgents(dir)
		if err != nil {
			return nil, err
		}
		rb.cfg.Logf("restart: prepare: kill -9 with %d turns running; killed %d orphaned agent processes", len(hung), n)
		return slices.Clone(hung), nil
	}
	return nil, errors.New("no waves")
}

// waitHanging waits until the session's /hang turn is running and the
// agent's first words of it ("hanging…") are in the transcript.
func (rb *restartRun) waitHanging(ctx context.Context, p *tetherdProc, sid string) error {
	end := time.Now().Add(120 * time.Second)
	for {
		var tr struct {
			Messages []struct {
				PromptID string `json:"promptId"`
				Role     string `json:"role"`
				Text     string `json:"text"`
			} `json:"messages"`
			Turns []benchTurn `json:"turns"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+sid+"/transcript", nil, &tr); err != nil {
			return err
		}
		running, said := false, false
		for _, t := range tr.Turns {
			if t.PromptID == "hang" {
				running = t.State == "running"
			}
		}
		for _, m := range tr.Messages {
			if m.PromptID == "hang" && m.Role == "agent" && strings.HasPrefix(m.Text, "hanging") {
				said = true
			}
		}
		if running && said {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("session %s: /hang turn not running with its first chunk after 120s", sid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

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

// verifyInterrupted checks that every mid-turn session's /hang turn is
// interrupted with reason daemon_restart, and that its status is sane.
func (rb *restartRun) verifyInterrupted(ctx context.Context, p *tetherdProc, hung []string) string {
	var mu sync.Mutex
	states := map[string]int{}
	sessState := map[string]int{}
	err := parallel(ctx, 0, len(hung), 4, func(ctx context.Context, i int) error {
		var t benchTurn
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+hung[i]+"/turns/hang", nil, &t); err != nil {
			return err
		}
		var st struct {
			State          string `json:"state"`
			ExecutorStatus string `json:"executorStatus"`
			IsAgentRunning bool   `json:"isAgentRunning"`
			ResumeReason   string `json:"resumeReason"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+hung[i]+"/status", nil, &st); err != nil {
			return err
		}
		mu.Lock()
		states[t.State+"/"+t.InterruptReason]++
		sessState[fmt.Sprintf("%s/executor %s/running %v/%s", st.State, st.ExecutorStatus, st.IsAgentRunning, st.ResumeReason)]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		return "verification failed: " + err.Error()
	}
	return fmt.Sprintf("/hang turns: %s; sessions: %s", countsString(states), countsString(sessState))
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// prepareEager builds a data dir with cfg.Eager resumable sessions: each
// had one completed turn, then the daemon stopped cleanly (SIGTERM), which
// stops the agents. It returns the sessions and the global event head
// before the stop (eager runs stream from there).
func (rb *restartRun) prepareEager(ctx context.Context, dir string) ([]string, string, error) {
	p, err := rb.launch(dir, "prep-eager")
	if err != nil {
		return nil, "", err
	}
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return nil, "", err
	}
	ids := make([]string, rb.cfg.Eager)
	err = parallel(ctx, 0, len(ids), rb.cfg.Create, func(ctx context.Context, i int) error {
		id, err := rb.createFinished(ctx, p, i)
		ids[i] = id
		return err
	})
	if err != nil {
		p.kill9()
		return nil, "", err
	}
	head, err := rb.globalHead(ctx, p)
	if err != nil {
		p.kill9()
		return nil, "", err
	}
	if err := p.term(); err != nil {
		return nil, "", err
	}
	rb.sweep(dir)
	return ids, head, nil
}

// globalHead is the cursor of the global stream's head.
func (rb *restartRun) globalHead(ctx context.Context, p *tetherdProc) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/events?follow=false&types=session.closed", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := rb.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var head string
	err = readSSE(resp.Body, func(event, data string) bool {
		if event == "replay_complete" {
			var c struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal([]byte(data), &c)
			head = c.Cursor
			return false
		}
		return true
	})
	if head == "" {
		return "", fmt.Errorf("no replay_complete on GET /events (HTTP %d): %v", resp.StatusCode, err)
	}
	return head, nil
}

// readSSE calls fn with each frame's event name and data.
func readSSE(r io.Reader, fn func(event, data string) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var event string
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if event != "" || len(data) > 0 {
				if !fn(event, strings.Join(data, "\n")) {
					return nil
				}
			}
			event, data = "", nil
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			event = value
		case "data":
			data = append(data, value)
		}
	}
}

// eager starts a daemon in eager mode on dir and times it until every
// session in ids has sent session.resumed (its agent is then running: the
// actor holds the connection before it submits the event), then checks
// each session's status.
func (rb *restartRun) eager(ctx context.Context, dir string, ids []string, head string, conc int) (eagerResult, error) {
	r := eagerResult{Conc: conc, Strategies: map[string]int{}, LoadBefore: loadavg()}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	p, err := rb.launch(dir, fmt.Sprintf("eager-c%d", conc), "--resume-on-start", "eager", "--resume-concurrency", strconv.Itoa(conc))
	if err != nil {
		return r, err
	}
	defer func() {
		_ = p.term()
		rb.sweep(dir)
	}()
	if r.Health, err = rb.waitHealthy(ctx, p); err != nil {
		return r, err
	}
	r.Reconciled = p.reconciled()
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	q := url.Values{"cursor": {head}, "types": {"session.resumed,session.executor_status"}}
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, p.base+"/events?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return r, fmt.Errorf("GET /events: HTTP %d: %s", resp.StatusCode, b)
	}
	resumed := map[string]bool{}
	err = readSSE(resp.Body, func(event, data string) bool {
		var m struct {
			SessionID string `json:"sessionId"`
			Strategy  string `json:"strategy"`
			Status    string `json:"status"`
		}
		if json.Unmarshal([]byte(data), &m) != nil || !want[m.SessionID] {
			return true
		}
		switch event {
		case "session.resumed":
			if !resumed[m.SessionID] {
				resumed[m.SessionID] = true
				d := time.Since(p.started)
				if len(resumed) == 1 {
					r.First = d
				}
				r.All = d
				r.Strategies[m.Strategy]++
			}
		case "session.executor_status":
			if m.Status == "error" {
				r.Errors++
			}
		}
		return len(resumed) < len(want)
	})
	r.Resumed = len(resumed)
	if len(resumed) < len(want) {
		return r, fmt.Errorf("%d of %d sessions resumed before the stream ended (%v); %d executor errors; log %s",
			len(resumed), len(want), err, r.Errors, p.logPath)
	}
	r.LoadAfter = loadavg()
	for _, pid := range agentProcs(dir) {
		cpu := procCPU(pid)
		if pid == p.cmd.Process.Pid {
			r.DaemonCPU = cpu
		} else {
			r.AgentsCPU += cpu
			r.Agents++
		}
	}
	var running atomic.Int64
	err = parallel(ctx, 0, len(ids), 4, func(ctx context.Context, i int) error {
		var st struct {
			IsAgentRunning bool `json:"isAgentRunning"`
		}
		if _, err := rb.api(ctx, p, http.MethodGet, "/session/"+ids[i]+"/status", nil, &st); err != nil {
			return err
		}
		if st.IsAgentRunning {
			running.Add(1)
		}
		return nil
	})
	r.Running = int(running.Load())
	rb.cfg.Logf("restart: eager c=%d: health %s, all %d resumed %s, %d running", conc, r.Health, r.Resumed, r.All, r.Running)
	return r, err
}

// describe summarises what a prepared (stopped) data dir holds, read from
// a throwaway copy of its database.
// It also returns the pids of executor rows left ready/starting: start-up
// reconciliation sends SIGTERM to their process groups.
func (rb *restartRun) describe(dir string) (string, []int) {
	tmp := dir + ".inspect"
	defer os.RemoveAll(tmp)
	if err := copyTree(dir, tmp); err != nil {
		return "inspect: " + err.Error(), nil
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(tmp, "tether.db"))
	if err != nil {
		return "inspect: " + err.Error(), nil
	}
	defer db.Close()
	var stale []int
	if rows, err := db.Query(`SELECT pid FROM executors_running WHERE status IN ('ready', 'starting') AND pid > 0`); err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				stale = append(stale, pid)
			}
		}
		rows.Close()
	}
	group := func(q string) string {
		rows, err := db.Query(q)
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var parts []string
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err.Error()
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		return strings.Join(parts, ", ")
	}
	one := func(q string) int {
		var n int
		_ = db.QueryRow(q).Scan(&n)
		return n
	}
	var size int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "tether.db") {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return fmt.Sprintf("sessions: %s; executors: %s; turns: %s; %d events, %d messages, %d tasks; tether.db* %.1f MiB",
		group(`SELECT state, count(*) FROM sessions GROUP BY state ORDER BY state`),
		group(`SELECT status || CASE WHEN pid > 0 THEN ' (pid set)' ELSE '' END, count(*) FROM executors_running GROUP BY 1 ORDER BY 1`),
		group(`SELECT state, count(*) FROM turns GROUP BY state ORDER BY state`),
		one(`SELECT count(*) FROM events`), one(`SELECT count(*) FROM messages`), one(`SELECT count(*) FROM tasks`),
		float64(size)/(1<<20)), stale
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

// copyTree copies a directory of regular files (a stopped data dir).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode().IsRegular():
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // sockets and the like: not part of a data dir
	})
}

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

// inProcStart times serve.go's start-up steps run in this process.
type inProcStart struct {
	Kind                            string // crash or again
	Open, Load, Writer, Reconcile   time.Duration
	ReconciledSessions, Interrupted int
	Batches                         int64 // writer transactions during Reconcile
}

// startInProc wires one start-up as cmd/tetherd/serve.go does (store,
// agents, hub, writer, session manager, Reconcile), timing each step.
func (rb *restartRun) startInProc(ctx context.Context, dir, kind string) (inProcStart, error) {
	r := inProcStart{Kind: kind}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t := time.Now()
	st, err := store.Open(ctx, filepath.Join(dir, "tether.db"))
	if err != nil {
		return r, err
	}
	defer st.Close()
	r.Open = time.Since(t)
	t = time.Now()
	reg, err := agents.Load(ctx, agents.Config{DataDir: dir, Self: rb.bin, Store: st, Logger: quiet})
	if err != nil {
		return r, err
	}
	r.Load = time.Since(t)
	t = time.Now()
	w, err := events.NewWriter(ctx, st, events.NewHub(events.HubConfig{}), events.WriterConfig{Logger: quiet})
	if err != nil {
		return r, err
	}
	defer w.Close()
	r.Writer = time.Since(t)
	mgr := sessions.New(st, w, reg, sessions.Config{Logger: quiet})
	defer mgr.Shutdown(context.Background())
	t = time.Now()
	rec, err := mgr.Reconcile(ctx)
	r.Reconcile = time.Since(t)
	_, r.Batches = w.Stats()
	r.ReconciledSessions, r.Interrupted = rec.Sessions, rec.InterruptedTurns
	return r, err
}

// profileReconcile runs the start-up steps in this process on cfg.Rounds
// fresh copies of the crashed data dir (CPU profile in cfg.CPUProfile),
// then again on each copy (profile in cfg.CPUProfile+".again").
func (rb *restartRun) profileReconcile(ctx context.Context, tmpl string, stale []int) ([]inProcStart, error) {
	var out []inProcStart
	var dirs []string
	for i := range rb.cfg.Rounds {
		dir := filepath.Join(rb.root, fmt.Sprintf("inproc-%d", i+1))
		if err := copyTree(tmpl, dir); err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	for _, kind := range []string{"crash", "again"} {
		path := rb.cfg.CPUProfile
		if kind == "again" {
			path += ".again"
		}
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		for _, dir := range dirs {
			if err := guardPIDs(stale); err != nil {
				pprof.StopCPUProfile()
				f.Close()
				return nil, err
			}
			r, err := rb.startInProc(ctx, dir, kind)
			if err != nil {
				pprof.StopCPUProfile()
				f.Close()
				return nil, err
			}
			rb.cfg.Logf("restart: in-process %s: %+v", kind, r)
			out = append(out, r)
		}
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func printInProc(rs []inProcStart, profile string) {
	if len(rs) == 0 {
		return
	}
	fmt.Printf("\nStart-up steps in this process (as serve.go wires them), CPU profiles %s (after kill -9) and %s.again:\n", profile, profile)
	w := table()
	fmt.Fprintln(w, "data dir\tstore.Open ms\tagents.Load ms\tNewWriter ms\tReconcile ms\treconciled\twriter batches\t")
	for _, r := range rs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t\n", r.Kind, msf(r.Open), msf(r.Load), msf(r.Writer), msf(r.Reconcile), r.ReconciledSessions, r.Interrupted, r.Batches)
	}
	w.Flush()
}
