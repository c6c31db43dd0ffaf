package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// stallRcvBuf is the stalled client's receive buffer (0: kernel default).
var stallRcvBuf int

// isoResult is one isolation run.
type isoResult struct {
	server    string
	stalled   bool
	rate      int     // producer events/s; 0 = as fast as the writer takes them
	writer    float64 // events/s committed and handed to the fan-out, within the run
	perSub    float64 // mean events/s received by each healthy subscriber, within the run
	p50, p99  time.Duration
	max       time.Duration
	maxGap    time.Duration // longest silence seen by a healthy subscriber
	received  int           // stamped events received, all healthy subscribers
	produced  int
	firstID   string        // first id: a healthy subscriber saw
	resume    int           // status of a reconnect with Last-Event-ID set to one of our cursors
	cutAfter  time.Duration // tetherd: when the hub dropped the stalled subscriber (0: never)
	lagFrames int           // stream_lagged frames seen by healthy subscribers
	reconnect int           // healthy subscribers' reconnects after the server ended their stream
	errs      []error
}

// backend is the SSE server under test. The producer is the same for
// both: durable ops through the real Writer into SQLite; a publisher
// goroutine takes the committed ops in order and, for r3labs, publishes
// their events to its server (tetherd's hub was already fed by the
// Writer at commit).
type backend struct {
	name    string
	d       *daemon
	sid     string
	url     string
	header  http.Header
	publish func(evs []store.Event) // nil for tetherd
	close   func()
	// cursor is a cursor of the session's log, as /transcript or a 202
	// hands it to clients.
	cursor string
}

func tetherdBackend(ctx context.Context, dir string) (*backend, error) {
	d, err := startDaemon(ctx, dir, 1, events.HubConfig{})
	if err != nil {
		return nil, err
	}
	sid := d.Sessions[0]
	sess, err := d.st.GetSession(ctx, sid)
	if err != nil {
		return nil, err
	}
	return &backend{name: "tetherd", d: d, sid: sid, url: d.streamURL(sid),
		header: http.Header{"Authorization": {"Bearer " + token}}, close: d.Close,
		cursor: events.Cursor{Epoch: sess.EventEpoch, N: 1}.String()}, nil
}

// r3labsBackend serves the same committed events through r3labs/sse/v2's
// server with its defaults (sse.New(): AutoReplay on, 1024-event stream
// buffer), ids set to our cursors.
func r3labsBackend(ctx context.Context, dir string) (*backend, error) {
	d, err := startDaemon(ctx, dir, 1, events.HubConfig{})
	if err != nil {
		return nil, err
	}
	sid := d.Sessions[0]
	sess, err := d.st.GetSession(ctx, sid)
	if err != nil {
		return nil, err
	}
	srv := sse.New()
	srv.CreateStream("bench")
	mux := http.NewServeMux()
	mux.Handle("/events", srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	b := &backend{name: "r3labs/sse", d: d, sid: sid, url: "http://" + ln.Addr().String() + "/events?stream=bench", header: http.Header{},
		cursor: events.Cursor{Epoch: sess.EventEpoch, N: 1}.String()}
	b.publish = func(evs []store.Event) {
		for _, e := range evs {
			srv.Publish("bench", &sse.Event{ID: []byte(events.Cursor{Epoch: sess.EventEpoch, N: e.Seq}.String()),
				Event: []byte(e.Type), Data: e.Payload})
		}
	}
	b.close = func() {
		srv.Close() // unblocks a Publish stuck behind the stalled subscriber
		_ = hs.Close()
		d.Close()
	}
	return b, nil
}

// runIsolation connects subs measuring subscribers (and, if stalled, one
// client that never reads) and pushes events for dur, at rate events/s or
// (rate 0) at full speed.
func runIsolation(ctx context.Context, b *backend, subs int, stalled bool, rate int, dur time.Duration) isoResult {
	res := isoResult{server: b.name, stalled: stalled, rate: rate}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := newClient()
	clients := make([]*subscriber, subs)
	for i := range clients {
		clients[i] = &subscriber{}
		ready := make(chan struct{})
		go clients[i].follow(sctx, client, b.url, b.header, ready)
		<-ready
	}
	var unstall func()
	if stalled {
		var err error
		if unstall, err = stall(b.url, b.header); err != nil {
			res.errs = append(res.errs, err)
			return res
		}
		defer unstall()
	}
	time.Sleep(300 * time.Millisecond) // let every stream subscribe

	// The producer submits; the publisher takes ops in commit order. The
	// channel bounds ops in flight, like a producer that needs acks.
	inflight := make(chan *events.Pending, 4096)
	var published atomic.Int64
	stop := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(inflight)
		for i := 0; ; i++ {
			if rate > 0 {
				if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
					time.Sleep(d)
				}
			}
			select {
			case <-stop:
				return
			case inflight <- b.d.w.Submit(b.d.chunkOp(b.sid, promptID(i/100), time.Now().UnixNano())):
			}
		}
	}()
	drained := make(chan time.Time, 1)
	var opErr atomic.Value // first failed op: the figures are then void
	go func() {
		for p := range inflight {
			evs, err := p.Wait(sctx)
			if err != nil {
				if sctx.Err() == nil {
					opErr.Store(err)
				}
				return
			}
			if b.publish != nil {
				b.publish(evs)
			}
			published.Add(int64(len(evs)))
		}
		drained <- time.Now()
	}()

	// Watch for the hub dropping the stalled subscriber (tetherd only).
	initial := b.d.hub.Count()
	deadline := time.After(dur)
	tick := time.NewTicker(10 * time.Millisecond)
watch:
	for {
		select {
		case <-deadline:
			break watch
		case <-tick.C:
			if stalled && res.cutAfter == 0 && b.publish == nil && b.d.hub.Count() < initial {
				res.cutAfter = time.Since(start)
			}
		}
	}
	tick.Stop()
	close(stop)
	// Both figures count what happened within the run: events published
	// (and events received) by the deadline.
	res.writer = float64(published.Load()) / dur.Seconds()
	receivedByDeadline := 0
	for _, c := range clients {
		receivedByDeadline += c.count()
	}
	res.perSub = float64(receivedByDeadline) / float64(subs) / dur.Seconds()
	end := time.Now()
	select {
	case <-drained: // everything submitted is published
	case <-time.After(2 * time.Second): // the publisher is blocked
	}
	res.produced = int(published.Load())
	if err, ok := opErr.Load().(error); ok {
		res.errs = append(res.errs, fmt.Errorf("writer op failed after %d events: %w", res.produced, err))
	}
	// Give the healthy subscribers time to receive what was published.
	for settle := time.Now().Add(3 * time.Second); time.Now().Before(settle); time.Sleep(20 * time.Millisecond) {
		done := true
		for _, c := range clients {
			done = done && c.count() >= res.produced
		}
		if done {
			break
		}
	}
	var all []time.Duration
	for _, c := range clients {
		c.finish(end)
		c.mu.Lock()
		all = append(all, c.lat...)
		res.maxGap = max(res.maxGap, c.maxGap)
		res.lagFrames += c.frames[events.StreamLagged]
		res.reconnect += c.reconnects
		if res.firstID == "" {
			res.firstID = c.firstID
		}
		if c.err != nil {
			res.errs = append(res.errs, c.err)
		}
		c.mu.Unlock()
	}
	slices.Sort(all)
	res.received = len(all)
	res.resume = probeResume(b)
	if len(all) > 0 {
		res.p50, res.p99, res.max = pct(all, 0.5), pct(all, 0.99), all[len(all)-1]
	}
	return res
}

// probeResume reconnects with Last-Event-ID set to a cursor of the log and
// returns the response status.
func probeResume(b *backend) int {
	u, err := url.Parse(b.url)
	if err != nil {
		return 0
	}
	q := u.Query()
	q.Set("follow", "false") // tetherd ends the stream after the replay
	u.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return 0
	}
	req.Header = b.header.Clone()
	req.Header.Set("Last-Event-ID", b.cursor)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func pct(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1))]
}

// isolation runs the control (no stalled client) and the stalled case
// against both servers, each on a fresh database: at full speed and, if
// rate > 0, paced at rate events/s.
func isolation(ctx context.Context, subs, rate int, dur time.Duration) ([]isoResult, error) {
	rates := []int{0}
	if rate > 0 {
		rates = append(rates, rate)
	}
	var out []isoResult
	for _, r := range rates {
		for _, stalled := range []bool{false, true} {
			for _, mk := range []func(context.Context, string) (*backend, error){tetherdBackend, r3labsBackend} {
				res, err := isolationRun(ctx, mk, subs, stalled, r, dur)
				if err != nil {
					return nil, err
				}
				out = append(out, res)
			}
		}
	}
	return out, nil
}

func isolationRun(ctx context.Context, mk func(context.Context, string) (*backend, error), subs int, stalled bool, rate int, dur time.Duration) (isoResult, error) {
	dir, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		return isoResult{}, err
	}
	defer os.RemoveAll(dir)
	b, err := mk(ctx, dir)
	if err != nil {
		return isoResult{}, err
	}
	defer b.close()
	r := runIsolation(ctx, b, subs, stalled, rate, dur)
	for _, err := range r.errs {
		fmt.Fprintf(os.Stderr, "tether-bench: %s stalled=%v rate=%d: %v\n", r.server, stalled, rate, err)
	}
	return r, nil
}
