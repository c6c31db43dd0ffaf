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
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver the store uses; inspects prepared data dirs
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
	rb, done, err := newRun("restart", cfg, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	root := rb.root
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
	env    []string // added to the environment of the daemons it launches

	n int // daemons started, for log names

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

var reconcileRE = regexp.MustCompile(`msg="reconciled sessions" sessions=(\d+) interruptedTurns=(\d+) (?:reattaching=\d+ )?took=(\S+)`)
