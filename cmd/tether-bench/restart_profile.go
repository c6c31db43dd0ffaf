package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
)

// The restart bench's in-process part (-restart-cpuprofile): start-up
// reconciliation run in this process on copies of the crashed data dir,
// profiled.

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
