package main

// The inbox part (-only inbox, issue 33): GET /inbox on the real binary
// with -inbox-sessions sessions in its SQLite database, two thirds of
// them waiting for a person (storetest.InboxFixture: pending permissions,
// interrupted and failed turns, agents that need credentials, and
// sessions where nothing waits, among them failed turns a later turn
// superseded). The database is written before the daemon starts, so the
// preparation is quick; the daemon's start-up reconciliation sees every
// session. Each round sends -inbox-requests GET /inbox (the first page,
// 50 items) one after another; a round's figure is its median, and the
// median of the rounds is reported with p99s and the load average.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// inboxConfig are the inbox part's settings (flags: inboxFlags).
type inboxConfig struct {
	Rounds, Sessions, Requests int
	Keep                       bool
	Logf                       func(format string, args ...any)
}

// inboxFlags registers the inbox part's flags on the command line.
func inboxFlags() *inboxConfig {
	c := &inboxConfig{}
	flag.IntVar(&c.Rounds, "inbox-rounds", 3, "inbox: rounds (median reported)")
	flag.IntVar(&c.Sessions, "inbox-sessions", 10000, "inbox: sessions in the database")
	flag.IntVar(&c.Requests, "inbox-requests", 200, "inbox: GET /inbox a round")
	flag.BoolVar(&c.Keep, "inbox-keep", false, "inbox: keep the temp dir (data dir, daemon log)")
	return c
}

// inboxResult is the part's outcome.
type inboxResult struct {
	Cfg            inboxConfig
	Waiting, Items int
	Prepare        time.Duration
	Medians, P99s  []time.Duration
	// Baseline is GET /sessions?limit=50's median of each round, on the
	// same daemon: a page of the same size from one indexed table.
	Baseline          []time.Duration
	Loads             []string
	PageBytes         int
	HasNextPageToken  bool
	FirstKind, LastAt string
}

func inboxBench(ctx context.Context, cfg inboxConfig) (res inboxResult, err error) {
	res.Cfg = cfg
	if cfg.Rounds <= 0 || cfg.Sessions <= 0 || cfg.Requests <= 0 {
		return res, fmt.Errorf("inbox: -inbox-rounds, -inbox-sessions and -inbox-requests must be positive")
	}
	rb, done, err := newRun("inbox", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	res.Loads = append(res.Loads, "start: "+loadavg())
	dir, took, err := rb.seedData(ctx, func(st *store.Store) (err error) {
		res.Waiting, err = storetest.InboxFixture(st, cfg.Sessions)
		return err
	})
	if err != nil {
		return res, err
	}
	res.Prepare = took
	p, err := rb.launch(dir, "inbox")
	if err != nil {
		return res, err
	}
	defer func() { _ = p.term() }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return res, err
	}
	var page struct {
		Items []struct {
			Kind string `json:"kind"`
			At   string `json:"at"`
		} `json:"items"`
		NextPageToken string `json:"nextPageToken"`
	}
	for range 20 { // warm: the first reads fill SQLite's page cache
		if _, err := rb.api(ctx, p, http.MethodGet, "/inbox", nil, &page); err != nil {
			return res, fmt.Errorf("inbox: %w (log %s)", err, p.logPath)
		}
	}
	res.Items, res.HasNextPageToken = len(page.Items), page.NextPageToken != ""
	if len(page.Items) > 0 {
		res.FirstKind, res.LastAt = page.Items[0].Kind, page.Items[len(page.Items)-1].At
	}
	res.Loads = append(res.Loads, "prepared: "+loadavg())
	for round := range cfg.Rounds {
		lat := make([]time.Duration, 0, cfg.Requests)
		for range cfg.Requests {
			t0 := time.Now()
			if _, err := rb.api(ctx, p, http.MethodGet, "/inbox", nil, nil); err != nil {
				return res, fmt.Errorf("inbox: round %d: %w", round+1, err)
			}
			lat = append(lat, time.Since(t0))
		}
		res.Medians = append(res.Medians, pctl(lat, 0.5))
		res.P99s = append(res.P99s, pctl(lat, 0.99))
		base := make([]time.Duration, 0, cfg.Requests)
		for range cfg.Requests {
			t0 := time.Now()
			if _, err := rb.api(ctx, p, http.MethodGet, "/sessions?limit=50", nil, nil); err != nil {
				return res, fmt.Errorf("inbox: round %d: %w", round+1, err)
			}
			base = append(base, time.Since(t0))
		}
		res.Baseline = append(res.Baseline, pctl(base, 0.5))
		res.Loads = append(res.Loads, fmt.Sprintf("round %d done: %s", round+1, loadavg()))
		cfg.Logf("inbox: round %d: median %s, p99 %s", round+1, res.Medians[round], res.P99s[round])
	}
	return res, nil
}

func printInbox(r inboxResult) {
	c := r.Cfg
	fmt.Printf("inbox: GET /inbox (first page) with %d sessions, %d of them waiting when written (median of %d rounds of %d requests, SQLite, standalone)\n",
		c.Sessions, r.Waiting, c.Rounds, c.Requests)
	fmt.Printf("  prepared in %s; a page holds %d items, more pages: %v\n", r.Prepare.Round(time.Millisecond), r.Items, r.HasNextPageToken)
	fmt.Printf("  %-34s %10s %s\n", "GET /inbox (median of a round)", medianDur(r.Medians).Round(10*time.Microsecond), durList(r.Medians))
	fmt.Printf("  %-34s %10s %s\n", "GET /inbox (p99 of a round)", medianDur(r.P99s).Round(10*time.Microsecond), durList(r.P99s))
	fmt.Printf("  %-34s %10s %s\n", "baseline GET /sessions?limit=50", medianDur(r.Baseline).Round(10*time.Microsecond), durList(r.Baseline))
	fmt.Printf("  inbox / baseline: %.2f×\n", float64(medianDur(r.Medians))/float64(medianDur(r.Baseline)))
	fmt.Printf("  goal: ≤ 50 ms %s\n", metStr(medianDur(r.Medians) <= 50*time.Millisecond))
	for _, l := range r.Loads {
		fmt.Printf("  loadavg %s\n", l)
	}
	fmt.Println()
}

// seedData prepares the run and writes its data dir's SQLite database
// with fill before any daemon starts (the inbox and history parts'
// fixtures), returning the dir and how long writing it took.
func (rb *restartRun) seedData(ctx context.Context, fill func(*store.Store) error) (dir string, took time.Duration, err error) {
	if err := rb.prepare(ctx); err != nil {
		return "", 0, err
	}
	dir = filepath.Join(rb.root, "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	begin := time.Now()
	st, err := store.Open(ctx, filepath.Join(dir, "tether.db"))
	if err != nil {
		return "", 0, err
	}
	err = fill(st)
	_ = st.Close()
	return dir, time.Since(begin), err
}
