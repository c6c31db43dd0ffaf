package webhooks

import (
	"context"

	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// Config tunes delivery.
type Config struct {
	Store *store.Store
	// Writer takes every write (positions, the delivery log): the one
	// writer of the database.
	Writer *events.Writer
	// Hub wakes the workers when global events commit.
	Hub *events.Hub
	// Horizon, when several nodes share the database, is where the log
	// of global ids is settled (store.EventHorizon): the nodes' writers
	// commit ids out of order, so a worker reads no further, or it would
	// pass over an id that commits after a higher one. nil: one writer,
	// ids commit in order.
	Horizon func(ctx context.Context) (int64, error)
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
	// RetryBase is the wait after a first failed attempt, doubled after
	// each further one up to RetryMax, with jitter (defaults 1 s, 5 min).
	RetryBase, RetryMax time.Duration
	// MaxFailures failed attempts in a row disable a webhook (default 20).
	MaxFailures int
	// UserAgent is sent with every request.
	UserAgent string
	Logger    *slog.Logger
}

// Dispatcher runs one worker per active webhook. Run owns them: it
// starts them, restarts one whose webhook changed, and stops them all
// when its context ends.
type Dispatcher struct {
	cfg    Config
	client *http.Client
	reload chan struct{}
	// leader is held while this node delivers (owned by Run).
	leader *store.Leadership

	mu      sync.Mutex
	workers map[string]*worker

	// delivered and failed count attempts since start; leading is 1
	// while this node delivers (for /metrics).
	delivered, failed, leading atomic.Int64
}

// Stats is what /metrics shows of delivery on this node.
type Stats struct {
	// Delivered and Failed count attempts since start.
	Delivered, Failed int64
	// Leading: this node delivers the webhooks (one node of several).
	Leading bool
	// Workers is how many webhooks this node delivers now.
	Workers int
}

// Stats reports delivery on this node.
func (d *Dispatcher) Stats() Stats {
	d.mu.Lock()
	n := 0
	for _, w := range d.workers {
		if !w.finished() { // one that stopped (disabled) waits for the next sync to go
			n++
		}
	}
	d.mu.Unlock()
	return Stats{Delivered: d.delivered.Load(), Failed: d.failed.Load(), Leading: d.leading.Load() == 1, Workers: n}
}

// New returns a dispatcher; nothing runs before Run.
func New(cfg Config) *Dispatcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = time.Second
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = max(5*time.Minute, cfg.RetryBase)
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	client := &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second},
		// A redirect is the receiver's answer, not a delivery.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Dispatcher{cfg: cfg, client: client, reload: make(chan struct{}, 1), workers: map[string]*worker{}}
}

// Changed tells the dispatcher a webhook was created, changed or
// deleted: its workers follow the database again.
func (d *Dispatcher) Changed() {
	select {
	case d.reload <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then stops every worker (each saves its
// position first) and returns.
func (d *Dispatcher) Run(ctx context.Context) error {
	defer func() {
		d.stopAll()
		if d.leader != nil {
			d.leader.Release()
		}
	}()
	sub := d.subscribe()
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	d.lead(ctx)
	d.sync(ctx)
	// A safety net: a worker looks at the log every second even if no
	// wake-up reached it (a subscription cut off, a commit of another
	// node).
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var in, cut <-chan struct{}
		if sub != nil {
			in, cut = sub.Ready(), sub.Done()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-in:
			sub.Take(nil) // a wake-up: the workers read the log
			d.pokeAll()
		case <-cut:
			sub.Close()
			sub = d.subscribe()
			d.pokeAll()
		case <-d.reload:
			d.sync(ctx)
		case <-tick.C:
			if sub == nil {
				sub = d.subscribe()
			}
			d.lead(ctx)
			d.pokeAll()
			d.sync(ctx) // a worker that stopped on a database error starts again
		}
	}
}

func (d *Dispatcher) subscribe() *events.Subscription {
	sub, err := d.cfg.Hub.Subscribe("")
	if err != nil {
		d.cfg.Logger.Warn("webhooks: no wake-ups from the hub; looking at the log every second", "err", err)
		return nil
	}
	return sub
}

func (d *Dispatcher) pokeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.workers {
		w.poke()
	}
}

// leaderKey names webhook delivery's leadership (store.TryLead).
const leaderKey = 1

// lead takes, keeps or loses the leadership of webhook delivery: of
// several nodes on one database, one delivers every webhook, so each is
// delivered once, in order. A node that loses it (its connection to the
// database gone) stops its workers; they save their positions as they
// stop, and the next leader goes on from there.
func (d *Dispatcher) lead(ctx context.Context) {
	if d.leader != nil && !d.leader.Held(ctx) {
		d.cfg.Logger.Warn("webhooks: this node no longer leads their delivery")
		d.stopAll()
		d.leader.Release()
		d.leader = nil
		d.leading.Store(0)
	}
	if d.leader == nil {
		l, err := d.cfg.Store.TryLead(ctx, leaderKey)
		if err == nil && l != nil {
			d.leader = l
			d.leading.Store(1)
		}
	}
}

// sync starts a worker for each active webhook without one and stops
// those whose webhook is gone, disabled or changed (a changed one starts
// again from its saved position).
func (d *Dispatcher) sync(ctx context.Context) {
	hooks, err := d.cfg.Store.ListWebhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Warn("webhooks: cannot list them; trying again", "err", err)
		}
		return
	}
	want := map[string]store.Webhook{}
	for _, h := range hooks {
		if h.State == store.WebhookActive {
			want[h.ID] = h
		}
	}
	if d.leader == nil {
		want = nil // another node delivers them
	}
	d.mu.Lock()
	var stop []*worker
	for id, w := range d.workers {
		h, ok := want[id]
		if !ok || w.finished() || !w.same(h) {
			stop = append(stop, w)
			delete(d.workers, id)
		}
	}
	d.mu.Unlock()
	for _, w := range stop {
		w.stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, h := range want {
		if _, ok := d.workers[id]; ok {
			continue
		}
		// A changed webhook's old worker saved its position as it
		// stopped: read it again.
		if fresh, err := d.cfg.Store.GetWebhook(ctx, id); err == nil && fresh.State == store.WebhookActive {
			h = fresh
		} else {
			continue
		}
		w := newWorker(d, h)
		var wctx context.Context
		wctx, w.cancel = context.WithCancel(ctx)
		d.workers[id] = w
		go w.run(wctx)
	}
}

func (d *Dispatcher) stopAll() {
	d.mu.Lock()
	ws := d.workers
	d.workers = map[string]*worker{}
	d.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// Test POSTs a webhook.test message to the webhook now, once, outside its
// order, logs the attempt and returns it.
func (d *Dispatcher) Test(ctx context.Context, id string) (store.WebhookDelivery, error) {
	h, err := d.cfg.Store.GetWebhook(ctx, id)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	msg := message("test_"+uuid.NewString(), Test, "A test of webhook "+id, time.Now(), map[string]any{"webhookId": id})
	res := attemptPost(ctx, d, h, msg, 0, 1)
	err = d.cfg.Writer.Exec(ctx, func(tx *store.Store) error { return tx.AddWebhookDelivery(ctx, res) })
	return res, err
}
