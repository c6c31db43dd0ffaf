package main

// The webhooks part (-only webhooks, issue 33), on the real binary with
// the demo agent, standalone, and a receiver in this process on
// loopback that answers 204 at once:
//
//   - latency: -webhooks-sessions sessions each take a turn every
//     1/-webhooks-rate-per-session seconds at most, for -webhooks-duration;
//     each turn (/permission) asks for permission, which this process
//     answers when its webhook brings the request (a webhook-driven
//     approval), so a turn makes three webhook events: the request, its
//     resolution and the turn's end. Each delivery's
//     latency is its arrival minus its payload's timestamp (the time the
//     event was written, in its commit). p50 and p99 of a round.
//   - throughput: -webhooks-backlog turn.completed events written to a
//     fresh database before tetherd starts, with a webhook whose position
//     is before them; from the daemon healthy to the last one received:
//     deliveries a second, one webhook, sustained over the whole backlog.
//
// The median of the rounds is reported with the load average.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/webhooks"
)

// webhooksConfig are the part's settings (flags: webhooksFlags).
type webhooksConfig struct {
	Rounds, Sessions, Backlog int
	RatePerSession            float64
	Duration                  time.Duration
	Keep                      bool
	Logf                      func(format string, args ...any)
}

func webhooksFlags() *webhooksConfig {
	c := &webhooksConfig{}
	flag.IntVar(&c.Rounds, "webhooks-rounds", 3, "webhooks: rounds (median reported)")
	flag.IntVar(&c.Sessions, "webhooks-sessions", 6, "webhooks: sessions taking turns in the latency run")
	flag.Float64Var(&c.RatePerSession, "webhooks-rate-per-session", 6, "webhooks: turns a second of each session")
	flag.DurationVar(&c.Duration, "webhooks-duration", 10*time.Second, "webhooks: length of a latency round")
	flag.IntVar(&c.Backlog, "webhooks-backlog", 20000, "webhooks: events of the throughput run")
	flag.BoolVar(&c.Keep, "webhooks-keep", false, "webhooks: keep the temp dir (data dir, daemon log)")
	return c
}

type webhooksRound struct {
	Events        int
	Rate          float64 // events delivered a second (latency run)
	P50, P99, Max time.Duration
	Throughput    float64 // deliveries a second (backlog run)
	Drain         time.Duration
}

type webhooksResult struct {
	Cfg    webhooksConfig
	Rounds []webhooksRound
	Loads  []string
}

// benchReceiver records when each delivery arrived and its payload's
// timestamp, and wakes whoever waits for a turn's end.
type benchReceiver struct {
	srv *http.Server
	url string
	// approve, when set, answers a permission.requested delivery (the
	// way a webhook-driven approval would).
	approve func(sessionID, requestID string)

	mu      sync.Mutex
	lat     []time.Duration
	n       int
	last    time.Time
	waiters map[string]chan struct{} // by promptId
}

func newBenchReceiver() (*benchReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &benchReceiver{url: "http://" + ln.Addr().String() + "/hook", waiters: map[string]chan struct{}{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *benchReceiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	var p struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			SessionID string `json:"sessionId"`
			PromptID  string `json:"promptId"`
			Event     struct {
				RequestID string `json:"requestId"`
			} `json:"event"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Type == webhooks.PermissionRequested && r.approve != nil {
		go r.approve(p.Data.SessionID, p.Data.Event.RequestID)
	}
	r.mu.Lock()
	r.n++
	r.last = at
	r.lat = append(r.lat, at.Sub(p.Timestamp))
	if ch, ok := r.waiters[p.Data.PromptID]; ok && p.Type == webhooks.TurnEnded {
		close(ch)
		delete(r.waiters, p.Data.PromptID)
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *benchReceiver) wait(promptID string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	r.waiters[promptID] = ch
	return ch
}

func (r *benchReceiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lat, r.n = nil, 0
}

func webhooksBench(ctx context.Context, cfg webhooksConfig) (res webhooksResult, err error) {
	res.Cfg = cfg
	if cfg.Rounds <= 0 || cfg.Sessions <= 0 || cfg.Backlog <= 0 || cfg.RatePerSession <= 0 {
		return res, fmt.Errorf("webhooks: -webhooks-rounds, -webhooks-sessions, -webhooks-backlog and -webhooks-rate-per-session must be positive")
	}
	rb, done, err := newRun("webhooks", restartConfig{Logf: cfg.Logf}, cfg.Keep)
	if err != nil {
		return res, err
	}
	defer done()
	res.Loads = append(res.Loads, "start: "+loadavg())
	if err := rb.prepare(ctx); err != nil {
		return res, err
	}
	rec, err := newBenchReceiver()
	if err != nil {
		return res, err
	}
	defer rec.srv.Close()
	for round := range cfg.Rounds {
		var r webhooksRound
		if err := rb.webhookLatency(ctx, cfg, rec, round, &r); err != nil {
			return res, err
		}
		if err := rb.webhookBacklog(ctx, cfg, rec, round, &r); err != nil {
			return res, err
		}
		res.Rounds = append(res.Rounds, r)
		res.Loads = append(res.Loads, fmt.Sprintf("round %d done: %s", round+1, loadavg()))
		cfg.Logf("webhooks: round %d: %d events at %.0f/s, p50 %s p99 %s; backlog %.0f deliveries/s", round+1, r.Events, r.Rate, r.P50, r.P99, r.Throughput)
	}
	return res, nil
}

// webhookLatency is a round's latency run on a fresh daemon.
func (rb *restartRun) webhookLatency(ctx context.Context, cfg webhooksConfig, rec *benchReceiver, round int, r *webhooksRound) error {
	dir := filepath.Join(rb.root, fmt.Sprintf("latency-%d", round))
	p, err := rb.launch(dir, fmt.Sprintf("latency-%d", round))
	if err != nil {
		return err
	}
	defer func() { _ = p.term() }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return err
	}
	events := []string{webhooks.PermissionRequested, webhooks.PermissionResolved, webhooks.TurnEnded}
	if _, err := rb.api(ctx, p, http.MethodPost, "/webhooks", map[string]any{"url": rec.url, "events": events}, nil); err != nil {
		return err
	}
	rec.approve = func(sid, rid string) {
		_, _ = rb.api(ctx, p, http.MethodPost, "/session/"+sid+"/permission/"+rid, map[string]any{"optionId": "allow_once"}, nil)
	}
	defer func() { rec.approve = nil }()
	var sids []string
	for range cfg.Sessions {
		var s struct {
			ID string `json:"id"`
		}
		if _, err := rb.api(ctx, p, http.MethodPost, "/session", map[string]any{"agentProfileId": "demo", "cwd": rb.cwd}, &s); err != nil {
			return err
		}
		sids = append(sids, s.ID)
	}
	// A first turn each: the agents start outside the measurement.
	if err := rb.turnsAt(ctx, p, rec, sids, 0, time.Now().Add(time.Hour), 1); err != nil {
		return err
	}
	rec.reset()
	start := time.Now()
	if err := rb.turnsAt(ctx, p, rec, sids, cfg.RatePerSession, start.Add(cfg.Duration), 0); err != nil {
		return fmt.Errorf("webhooks: %w (log %s)", err, p.logPath)
	}
	rec.mu.Lock()
	lat := append([]time.Duration(nil), rec.lat...)
	rec.mu.Unlock()
	r.Events, r.Rate = len(lat), float64(len(lat))/time.Since(start).Seconds()
	r.P50, r.P99, r.Max = pctl(lat, 0.5), pctl(lat, 0.99), pctl(lat, 1)
	return nil
}

// turnsAt has each session take a turn every 1/rate seconds until end
// (or n turns each, when n > 0), the next once the last one's delivery
// arrived; then it checks every delivery arrived.
func (rb *restartRun) turnsAt(ctx context.Context, p *tetherdProc, rec *benchReceiver, sids []string, rate float64, end time.Time, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(sids))
	var mu sync.Mutex
	var waits []<-chan struct{}
	for i, sid := range sids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now()
			for k := 0; (n == 0 || k < n) && time.Now().Before(end); k++ {
				if rate > 0 {
					next = next.Add(time.Duration(float64(time.Second) / rate))
				}
				pid := fmt.Sprintf("t%d-%d-%d", i, k, time.Now().UnixNano())
				got := rec.wait(pid)
				if _, err := rb.api(ctx, p, http.MethodPost, "/session/"+sid+"/prompt",
					map[string]any{"prompt": []map[string]any{{"type": "text", "text": "/permission"}}, "promptId": pid}, nil); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				waits = append(waits, got)
				mu.Unlock()
				// Its delivery before the next turn: a session's turns do
				// not pile up in its queue when the machine cannot keep
				// the pace (the rate reached is reported).
				select {
				case <-got:
				case <-time.After(30 * time.Second):
				case <-ctx.Done():
				}
				time.Sleep(time.Until(next))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	for _, got := range waits {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("a turn's delivery did not arrive in 30 s")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// webhookBacklog is a round's throughput run: the backlog written before
// the daemon starts, drained by one webhook.
func (rb *restartRun) webhookBacklog(ctx context.Context, cfg webhooksConfig, rec *benchReceiver, round int, r *webhooksRound) error {
	dir := filepath.Join(rb.root, fmt.Sprintf("backlog-%d", round))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeBacklog(ctx, filepath.Join(dir, "tether.db"), rec.url, cfg.Backlog); err != nil {
		return err
	}
	rec.reset()
	p, err := rb.launch(dir, fmt.Sprintf("backlog-%d", round))
	if err != nil {
		return err
	}
	defer func() { _ = p.term() }()
	if _, err := rb.waitHealthy(ctx, p); err != nil {
		return err
	}
	start := time.Now()
	for deadline := start.Add(10 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		rec.mu.Lock()
		n, last := rec.n, rec.last
		rec.mu.Unlock()
		if n >= cfg.Backlog {
			r.Drain = last.Sub(start)
			r.Throughput = float64(n) / r.Drain.Seconds()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhooks: %d of %d delivered in 10 min (log %s)", n, cfg.Backlog, p.logPath)
		}
	}
}

// writeBacklog makes a database with n turn.completed events of one
// session and a webhook, subscribed to turn.ended, positioned before
// them.
func writeBacklog(ctx context.Context, path, url string, n int) error {
	st, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	epoch, err := st.GlobalEpoch(ctx)
	if err != nil {
		return err
	}
	return st.Tx(ctx, func(tx *store.Store) error {
		task, err := tx.CreateTask(ctx, session.Task{Title: "backlog", Workspace: "/"})
		if err != nil {
			return err
		}
		s, err := tx.CreateSession(ctx, session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: "/"}, session.Executor{})
		if err != nil {
			return err
		}
		last, err := tx.MaxEventID(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.CreateWebhook(ctx, store.Webhook{URL: url, Events: []string{webhooks.TurnEnded}, Secret: webhooks.NewSecret(),
			LastEventID: last, Epoch: epoch}); err != nil {
			return err
		}
		now := time.Now().UTC()
		evs := make([]store.Event, 0, n)
		for i := range n {
			id := last + int64(i) + 1
			payload := fmt.Sprintf(`{"sessionId":%q,"taskId":%q,"promptId":"p%d","state":"completed","stopReason":"end_turn","endedAt":%q}`,
				s.ID, task.ID, i, now.Format(time.RFC3339Nano))
			evs = append(evs, store.Event{ID: id, SessionID: s.ID, Seq: int64(i) + 1, Type: "turn.completed", PromptID: fmt.Sprintf("p%d", i),
				Global: true, Payload: json.RawMessage(payload), Time: now})
		}
		return tx.AppendEvents(ctx, evs)
	})
}

func printWebhooks(r webhooksResult) {
	c := r.Cfg
	med := func(f func(webhooksRound) float64) float64 {
		xs := make([]float64, len(r.Rounds))
		for i, x := range r.Rounds {
			xs[i] = f(x)
		}
		return medianF(xs)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Printf("webhooks: one webhook, a receiver on loopback answering 204 at once (median of %d rounds, SQLite, standalone, demo agent)\n", c.Rounds)
	fmt.Printf("  latency: %d sessions × %.1f turns/s at most for %s, each turn a permission asked and answered through the webhook (3 events); commit → delivered\n", c.Sessions, c.RatePerSession, c.Duration)
	for i, x := range r.Rounds {
		fmt.Printf("    round %d: %d events at %.0f/s, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", i+1, x.Events, x.Rate, ms(x.P50), ms(x.P99), ms(x.Max))
	}
	p99 := med(func(x webhooksRound) float64 { return ms(x.P99) })
	rate := med(func(x webhooksRound) float64 { return x.Rate })
	fmt.Printf("    median: %.0f events/s, p50 %.1f ms, p99 %.1f ms (goal p99 ≤ 100 ms at 100 events/s: %s)\n",
		rate, med(func(x webhooksRound) float64 { return ms(x.P50) }), p99, metStr(p99 <= 100 && rate >= 95))
	fmt.Printf("  throughput: a backlog of %d events delivered from the daemon's start\n", c.Backlog)
	for i, x := range r.Rounds {
		fmt.Printf("    round %d: %.0f deliveries/s (%s)\n", i+1, x.Throughput, x.Drain.Round(time.Millisecond))
	}
	tp := med(func(x webhooksRound) float64 { return x.Throughput })
	fmt.Printf("    median: %.0f deliveries/s (goal ≥ 1,000/s: %s)\n", tp, metStr(tp >= 1000))
	for _, l := range r.Loads {
		fmt.Printf("  loadavg %s\n", l)
	}
	fmt.Println()
}
