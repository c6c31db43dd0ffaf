package main

// The history part (-only history, issue 36's long histories): reads of a
// long session on the real binary, its SQLite database written before the
// daemon starts (storetest.HistoryFixture): a session of -history-turns
// turns (10 events each) and one of 50, both at rest. Each round sends
// -history-requests of each read one after another: GET
// /session/{id}/context of the long session and of the short one (a read
// that does not grow with the history reads the same), GET /session/{id}
// as the baseline, the first transcript page (50 turns) of each, the
// oldest page of the long one (found by paging back through all of it),
// and the whole transcript of the long one (a few requests). A round's figure is its median; the
// median of the rounds is reported with p99s and the load average.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// historyConfig are the history part's settings (flags: historyFlags).
type historyConfig struct {
	Rounds, Turns, Requests int
	Keep                    bool
	Logf                    func(format string, args ...any)
}

// historyFlags registers the history part's flags on the command line.
func historyFlags() *historyConfig {
	c := &historyConfig{}
	flag.IntVar(&c.Rounds, "history-rounds", 3, "history: rounds (median reported)")
	flag.IntVar(&c.Turns, "history-turns", 10000, "history: turns of the long session")
	flag.IntVar(&c.Requests, "history-requests", 200, "history: requests of each read a round")
	flag.BoolVar(&c.Keep, "history-keep", false, "history: keep the temp dir (data dir, daemon log)")
	return c
}

// historyRead is one read's figures, a median and a p99 per round.
type historyRead struct {
	Name          string
	Medians, P99s []time.Duration
}

// historyResult is the part's outcome.
type historyResult struct {
	Cfg     historyConfig
	Prepare time.Duration
	Reads   []historyRead
	Loads   []string
}

// shortTurns is the short session's history: the flat reads' reference.
const shortTurns = 50

func historyBench(ctx context.Context, cfg historyConfig) (res historyResult, err error) {
	res.Cfg = cfg
	if cfg.Rounds <= 0 || cfg.Turns <= 0 || cfg.Requests <= 0 {
		return res, fmt.Errorf("history: -history-rounds, -history-turns and -history-requests must be positive")
	}
	rb, done, err := newRun("history", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	res.Loads = append(res.Loads, "start: "+loadavg())
	var long, short string
	dir, took, err := rb.seedData(ctx, func(st *store.Store) (err error) {
		if long, err = storetest.HistoryFixture(st, cfg.Turns); err != nil {
			return err
		}
		short, err = storetest.HistoryFixture(st, shortTurns)
		return err
	})
	if err != nil {
		return res, err
	}
	res.Prepare = took
	p, err := rb.launch(dir, "history")
	if err != nil {
		return res, err
	}
	defer func() { _ = p.term() }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return res, err
	}
	oldest, err := oldestPage(ctx, rb, p, long, cfg.Turns)
	if err != nil {
		return res, err
	}
	reads := []struct {
		name, path string
		requests   int
	}{
		{fmt.Sprintf("GET /context, %d turns", cfg.Turns), "/session/" + long + "/context", cfg.Requests},
		{fmt.Sprintf("GET /context, %d turns", shortTurns), "/session/" + short + "/context", cfg.Requests},
		{fmt.Sprintf("baseline GET /session, %d turns", cfg.Turns), "/session/" + long, cfg.Requests},
		{fmt.Sprintf("transcript first page, %d turns", cfg.Turns), "/session/" + long + "/transcript?limit=" + fmt.Sprint(historyPage), cfg.Requests},
		{fmt.Sprintf("transcript first page, %d turns", shortTurns), "/session/" + short + "/transcript?limit=" + fmt.Sprint(historyPage), cfg.Requests},
		{fmt.Sprintf("transcript oldest page, %d turns", cfg.Turns), "/session/" + long + "/transcript?limit=" + fmt.Sprint(historyPage) + "&pageToken=" + oldest, cfg.Requests},
		// The whole of a long one is slow: a few requests say enough.
		{fmt.Sprintf("whole transcript, %d turns", cfg.Turns), "/session/" + long + "/transcript", max(cfg.Requests/20, 3)},
	}
	for _, r := range reads {
		for range 20 { // warm: the first reads fill SQLite's page cache
			if _, err := rb.api(ctx, p, http.MethodGet, r.path, nil, nil); err != nil {
				return res, fmt.Errorf("history: %s: %w (log %s)", r.name, err, p.logPath)
			}
		}
		res.Reads = append(res.Reads, historyRead{Name: r.name})
	}
	res.Loads = append(res.Loads, "prepared: "+loadavg())
	for round := range cfg.Rounds {
		for i, r := range reads {
			lat := make([]time.Duration, 0, r.requests)
			for range r.requests {
				t0 := time.Now()
				if _, err := rb.api(ctx, p, http.MethodGet, r.path, nil, nil); err != nil {
					return res, fmt.Errorf("history: round %d: %s: %w", round+1, r.name, err)
				}
				lat = append(lat, time.Since(t0))
			}
			res.Reads[i].Medians = append(res.Reads[i].Medians, pctl(lat, 0.5))
			res.Reads[i].P99s = append(res.Reads[i].P99s, pctl(lat, 0.99))
		}
		res.Loads = append(res.Loads, fmt.Sprintf("round %d done: %s", round+1, loadavg()))
		cfg.Logf("history: round %d: %s median %s", round+1, reads[0].name, res.Reads[0].Medians[round])
	}
	return res, nil
}

// historyPage is the transcript page size the history part reads (the
// Web Shell's).
const historyPage = 50

// oldestPage walks the long session's transcript back a page at a time, as
// a reader scrolling to its start would, checks the pages hold every turn,
// and returns the token of the oldest page.
func oldestPage(ctx context.Context, rb *restartRun, p *tetherdProc, sid string, turns int) (string, error) {
	token, seen := "", 0
	for {
		var page struct {
			Turns []struct {
				PromptID string `json:"promptId"`
			} `json:"turns"`
			NextPageToken string `json:"nextPageToken"`
		}
		path := fmt.Sprintf("/session/%s/transcript?limit=%d", sid, historyPage)
		if token != "" {
			path += "&pageToken=" + url.QueryEscape(token)
		}
		if _, err := rb.api(ctx, p, http.MethodGet, path, nil, &page); err != nil {
			return "", fmt.Errorf("history: transcript pages: %w", err)
		}
		seen += len(page.Turns)
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}
	if seen != turns {
		return "", fmt.Errorf("history: transcript pages held %d turns, want %d", seen, turns)
	}
	return url.QueryEscape(token), nil
}

func printHistory(r historyResult) {
	c := r.Cfg
	fmt.Printf("history: reads of a session of %d turns (%d events) beside one of %d (median of %d rounds of %d requests, SQLite, standalone)\n",
		c.Turns, c.Turns*storetest.HistoryEventsPerTurn, shortTurns, c.Rounds, c.Requests)
	fmt.Printf("  prepared in %s\n", r.Prepare.Round(time.Millisecond))
	for _, x := range r.Reads {
		fmt.Printf("  %-40s median %10s %s  p99 %10s\n", x.Name, medianDur(x.Medians).Round(10*time.Microsecond), durList(x.Medians),
			medianDur(x.P99s).Round(10*time.Microsecond))
	}
	long, short := medianDur(r.Reads[0].Medians), medianDur(r.Reads[1].Medians)
	fmt.Printf("  long / short: %.2f×, long / baseline: %.2f×\n", float64(long)/float64(short), float64(long)/float64(medianDur(r.Reads[2].Medians)))
	fmt.Printf("  goal: /context at %d turns ≤ 5 ms %s\n", c.Turns, metStr(long <= 5*time.Millisecond))
	first, whole := medianDur(r.Reads[3].Medians), medianDur(r.Reads[6].Medians)
	fmt.Printf("  transcript first page (%d turns) at %d turns / at %d: %.2f×; whole / first page: %.0f×\n", historyPage, c.Turns, shortTurns,
		float64(first)/float64(medianDur(r.Reads[4].Medians)), float64(whole)/float64(first))
	fmt.Printf("  goal: first transcript page at %d turns ≤ 50 ms %s\n", c.Turns, metStr(first <= 50*time.Millisecond))
	for _, l := range r.Loads {
		fmt.Printf("  loadavg %s\n", l)
	}
	fmt.Println()
}
