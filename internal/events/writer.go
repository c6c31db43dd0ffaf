package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// DefaultMaxQueue is how many changes may wait for the writer by default.
const DefaultMaxQueue = 4096

// WriterConfig tunes group commit.
type WriterConfig struct {
	// MaxBatch bounds ops per transaction.
	MaxBatch int
	// MaxQueue bounds the changes waiting for the writer (default
	// DefaultMaxQueue); a submitter past it waits for room, so producers
	// are held to the pace of the disk instead of growing memory.
	MaxQueue int
	// CommitDelay, for tests and measurements only, sleeps before every
	// transaction: a throttled disk.
	CommitDelay time.Duration
	// SyncEvery paces Durable's sync rounds (DefaultSyncEvery when 0); a
	// negative one runs none, so Durable answers at once (what a commit
	// was before, for comparisons: a power cut may take acknowledged
	// records with it).
	SyncEvery time.Duration
	// Cluster, when several nodes share the database, fences each
	// transaction's sessions, gives out global ids and takes over
	// publishing (nil: this daemon is the only writer).
	Cluster Cluster
	Logger  *slog.Logger
}

// Cluster is what the writer does differently when several nodes write
// one database (internal/cluster). Its transaction calls Fence and then
// ReserveIDs last, just before the commit.
type Cluster interface {
	// Fence checks, under a share lock held until the commit, that this
	// node holds the leases of sessions (errcode.SessionLeaseLost for
	// one it does not, which fails the ops of that session alone) and
	// returns their generations, which key the writer's per-session
	// caches (a session lost and taken back must be read again).
	Fence(ctx context.Context, tx *store.Store, sessions []string) (map[string]int64, error)
	// ReserveIDs takes n global event ids, ascending (not in commit
	// order across the nodes: the readers hold back behind the writers
	// still running); it also tells the other nodes that events commit
	// with this transaction. It returns the transaction's mark too, in
	// the same round trip, for a COMMIT whose connection drops.
	ReserveIDs(ctx context.Context, tx *store.Store, n int) ([]int64, store.TxMark, error)
	// Committed hears each commit's events in place of the hub, which the
	// cluster's feed publishes to in global id order.
	Committed(evs []store.Event)
	// Generation is the generation of the session's lease this node
	// holds now (0: none). A change is submitted under it, and commits
	// only under it: one decided under a lease this node lost and has
	// taken again since (an outage longer than the TTL) is refused, or
	// it would land beside what the new lease's owner did in its place.
	Generation(sessionID string) int64
}

// Writer is the single goroutine that writes the log. Ops queue in a
// bounded intake (see MaxQueue); the writer takes everything queued, runs it in
// one transaction (each op in its own savepoint, so one failure does not
// sink the others), numbers the emitted events, commits, and only then
// publishes them to the hub — an event anyone has seen always survives a
// crash with the same cursor. Publishing and answering the ops happen on
// a second goroutine, the publisher, in commit order, while the writer
// already runs the next transaction: the fan-out to subscribers and the
// submitters' callbacks are not on the commit path.
type Writer struct {
	st  *store.Store
	hub *Hub
	cfg WriterConfig

	mu     sync.Mutex
	queue  []op
	signal chan struct{}
	closed bool
	done   chan struct{}
	// outcomes carries each transaction's outcome, in commit order, from
	// the writer goroutine to the publisher (publish), which publishes
	// the events and answers the ops. Its small buffer lets the writer
	// commit ahead while a batch is being published, no further.
	outcomes chan outcome
	// room holds one token per queued op; its capacity is MaxQueue. A
	// submitter takes a token before queueing and the writer returns it as
	// it takes the op out of the queue. closing ends the wait of
	// submitters blocked for a token when Close is called.
	room    chan struct{}
	closing chan struct{}
	// waiting counts submitters blocked for room, and peak is the longest
	// the queue has been (for /metrics and tests).
	waiting, peak atomic.Int64

	// committed and batches count what has been written (for /metrics).
	committed, batches atomic.Int64
	// retries counts batches rolled back and redone one op per
	// transaction; busy counts transactions that failed because the
	// database was locked (for /metrics).
	retries, busy atomic.Int64
	// failures counts failed ops by error code (for /metrics).
	failMu   sync.Mutex
	failures map[string]int64

	// sync answers Durable (nil: commits are durable when they return, or
	// SyncEvery < 0).
	sync *syncer

	// unreachable is set while the writer holds its changes because the
	// database cannot be reached (untilReachable).
	unreachable atomic.Bool

	// Owned by the writer goroutine.
	// lastUnreachable is the error the database was last unreachable with.
	lastUnreachable error
	// doubt is the last transaction whose connection dropped after its
	// last statement, until the database says whether it committed.
	doubt   *inDoubt
	drafts  []Draft // commitTx's buffer of an op's drafts
	lastID  int64
	lastSeq map[string]int64
	// gens are the lease generations lastSeq and latest were read under
	// (Cluster only): at another generation they are read again.
	gens map[string]int64
	// latest holds, per session and event type, the payload of the last
	// committed event of that type, for the types drafts mark Latest
	// (latestTypes).
	latest      map[latestKey]string
	latestTypes map[string]bool
}

// outcome is one transaction's result for the publisher: the events
// committed (nil after a failure) and, for each op, its share of them or
// its error.
type outcome struct {
	evs []store.Event
	// doms are evs' domain payloads (nil for a map payload), index for index.
	doms []session.EventPayload
	ops  []op
	ends []int // evs[ends[i-1]:ends[i]] belong to ops[i]
	err  error // set: ops (one) failed with it, evs is nil
}

// NewWriter starts the writer goroutine.
func NewWriter(ctx context.Context, st *store.Store, hub *Hub, cfg WriterConfig) (*Writer, error) {
	if cfg.MaxBatch <= 0 {
		// Well below the hub's per-subscriber queue (4096): two batches
		// published back to back must not overflow a healthy subscriber.
		cfg.MaxBatch = 512
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	last, err := st.MaxEventID(ctx)
	if err != nil {
		return nil, err
	}
	w := &Writer{st: st, hub: hub, cfg: cfg, signal: make(chan struct{}, 1), done: make(chan struct{}), outcomes: make(chan outcome, 2),
		room: make(chan struct{}, cfg.MaxQueue), closing: make(chan struct{}),
		failures: map[string]int64{}, lastID: last, lastSeq: map[string]int64{}, latest: map[latestKey]string{}, latestTypes: map[string]bool{},
		gens: map[string]int64{}}
	if st.NeedsSync() && cfg.SyncEvery >= 0 {
		if cfg.SyncEvery == 0 {
			cfg.SyncEvery = DefaultSyncEvery
		}
		w.sync = newSyncer(st, cfg.SyncEvery, cfg.Logger)
	}
	go w.run()
	go w.publish()
	return w, nil
}

// ErrClosed is returned for ops submitted after Close.
var ErrClosed = errcode.New(errcode.ServiceShuttingDown, "event writer is closed")

// Submit queues an op and returns its Pending outcome; it waits while the
// queue is full (see SubmitChange).
func (w *Writer) Submit(apply Apply) *Pending { return w.SubmitChange(Func("", apply)) }

// SubmitChange queues a change and returns its Pending outcome. While the
// queue is full it waits for room: back-pressure on whoever produces
// changes faster than the disk takes them. It must never be called from a
// Pending.Then callback: those run on the publisher, and the writer, which
// makes room, waits for the publisher once it is two batches ahead.
func (w *Writer) SubmitChange(c Change) *Pending {
	return w.SubmitContext(context.Background(), c)
}

// SubmitContext is SubmitChange for a submitter that can give up: should
// ctx end while the queue is full, the change is not queued and its
// Pending fails with ctx's error.
func (w *Writer) SubmitContext(ctx context.Context, c Change) *Pending {
	return w.submit(ctx, c, 0)
}

// SubmitUnder is SubmitChange for a change decided under generation gen
// of its session's lease (a session actor's): with several nodes it
// commits only while this node holds the lease at that generation, and
// is refused (errcode.SessionLeaseLost) once it was lost, even if taken
// again since. 0 takes the generation held when it is queued.
func (w *Writer) SubmitUnder(gen int64, c Change) *Pending {
	return w.submit(context.Background(), c, gen)
}

func (w *Writer) submit(ctx context.Context, c Change, gen int64) *Pending {
	p := newPending()
	select {
	case w.room <- struct{}{}:
	default:
		w.waiting.Add(1)
		select {
		case w.room <- struct{}{}:
			w.waiting.Add(-1)
		case <-w.closing:
			w.waiting.Add(-1)
			p.finish(nil, w.failed(c, ErrClosed))
			return p
		case <-ctx.Done():
			w.waiting.Add(-1)
			p.finish(nil, ctx.Err())
			return p
		}
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.room
		p.finish(nil, w.failed(c, ErrClosed))
		return p
	}
	o := op{change: c, p: p, gen: gen}
	if w.cfg.Cluster != nil && c.SessionID() != "" && gen == 0 {
		o.gen = w.cfg.Cluster.Generation(c.SessionID())
	}
	w.queue = append(w.queue, o)
	if n := int64(len(w.queue)); n > w.peak.Load() {
		w.peak.Store(n) // under mu: no lost update
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
	return p
}

// Do submits an op and waits for it; ctx bounds both the wait for room in
// the queue and the wait for the commit.
func (w *Writer) Do(ctx context.Context, apply Apply) ([]store.Event, error) {
	return w.SubmitContext(ctx, Func("", apply)).Wait(ctx)
}

// Exec runs fn in the writer's next batch and waits for it: the way for
// writes that emit no events (tasks, agent profiles, retention) to reach
// the database. Every write goes through the one writer, so none waits on
// SQLite's lock, where a busy writer can starve it past busy_timeout
// ("database is locked").
func (w *Writer) Exec(ctx context.Context, fn func(tx *store.Store) error) error {
	_, err := w.Do(ctx, func(tx *store.Store, _ Emit) error { return fn(tx) })
	return err
}

// Queued is how many ops wait for the writer (for /metrics and tests).
func (w *Writer) Queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// QueueStats reports the queue's bound, the longest it has been since
// start, and how many submitters wait for room in it now (for /metrics
// and tests).
func (w *Writer) QueueStats() (limit, peak, waiting int) {
	return w.cfg.MaxQueue, int(w.peak.Load()), int(w.waiting.Load())
}

// Stats reports events committed and batches (transactions) since start.
func (w *Writer) Stats() (events, batches int64) { return w.committed.Load(), w.batches.Load() }

// RetryStats reports batches retried one op per transaction after a
// failure, and transactions that failed with "database is locked".
func (w *Writer) RetryStats() (retries, busy int64) { return w.retries.Load(), w.busy.Load() }

// FailureStats reports failed ops since start by error code (for /metrics).
func (w *Writer) FailureStats() map[string]int64 {
	w.failMu.Lock()
	defer w.failMu.Unlock()
	return maps.Clone(w.failures)
}

// Unreachable reports whether the writer is holding changes because the
// database cannot be reached: they commit once it is back.
func (w *Writer) Unreachable() bool { return w.unreachable.Load() }

// isClosing reports whether Close has been called: an outage then fails
// what is held instead of waiting for the database.
func (w *Writer) isClosing() bool {
	select {
	case <-w.closing:
		return true
	default:
		return false
	}
}

// Close stops accepting ops, writes everything queued and returns.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		close(w.closing)
	}
	w.closed = true
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
	<-w.done
	if w.sync != nil {
		w.sync.close() // a last round for what the last commits owe
	}
}

func (w *Writer) run() {
	defer close(w.outcomes) // the publisher answers what is left, then closes done
	for {
		w.mu.Lock()
		n := min(len(w.queue), w.cfg.MaxBatch)
		batch := w.queue[:n:n]
		w.queue = w.queue[n:]
		closed := w.closed
		w.mu.Unlock()
		for range n {
			<-w.room // room for the next submitters while this batch commits
		}
		if n > 0 {
			if w.cfg.CommitDelay > 0 {
				time.Sleep(w.cfg.CommitDelay)
			}
			w.commit(batch)
			// Between transactions: the store's moment to restart its WAL.
			if err := w.st.RestartWALIfDue(writerCtx); err != nil {
				w.cfg.Logger.Warn("WAL restart failed; the checkpointer asks again", "err", err)
			}
			continue
		}
		if closed {
			return
		}
		<-w.signal
	}
}

// publish is the publisher goroutine: it publishes each committed batch
// and answers its ops, in commit order, until the writer has stopped.
func (w *Writer) publish() {
	defer close(w.done)
	for o := range w.outcomes {
		if o.err != nil {
			o.ops[0].p.finish(nil, o.err)
			continue
		}
		if len(o.evs) > 0 {
			if w.cfg.Cluster != nil {
				w.cfg.Cluster.Committed(o.evs)
			} else {
				w.hub.Publish(o.evs)
			}
		}
		from := 0
		for i, op := range o.ops {
			op.p.finishWith(o.evs[from:o.ends[i]:o.ends[i]], o.doms[from:o.ends[i]:o.ends[i]])
			from = o.ends[i]
		}
	}
}

// commit writes one batch in one transaction. Should any op fail, the
// batch is rolled back and its ops are retried one transaction each, so a
// failing op reports its own error without sinking the others (and without
// leaving half of its writes behind).
//
// A batch the database could not be reached for is not failed: it is
// committed again, whole and first, until the database is back (or the
// writer closes), while what is submitted meanwhile waits behind it.
// Nothing accepted is lost to an outage, and nothing is numbered or
// published before it commits.
func (w *Writer) commit(batch []op) {
	if len(batch) > 1 {
		if err := w.untilReachable(batch); err == nil {
			return
		}
		w.retries.Add(1)
	}
	for _, o := range batch {
		_ = w.untilReachable([]op{o})
	}
}

var (
	errOpFailed    = errors.New("op failed")
	errUnreachable = errors.New("database unreachable")
)

// ctx is the context every change runs under: the writer's own, never a
// request's, so nothing but the change itself can fail its batch.
var writerCtx = context.Background()

// commitTx runs ops in one transaction. On success it hands the events and
// every op to the publisher; on failure it answers nothing (the caller
// retries) unless the batch is a single op, which then gets its error
// (through the publisher too, so every op is answered in commit order).
func (w *Writer) commitTx(batch []op) error {
	ctx := writerCtx
	// Most ops emit one event. The slice is the batch's own: the
	// publisher and the ops' submitters keep it.
	evs := make([]store.Event, 0, len(batch))
	doms := make([]session.EventPayload, 0, len(batch))
	ends := make([]int, len(batch)) // evs[ends[i-1]:ends[i]] belong to op i
	startID := w.lastID
	seqs := map[string]int64{}
	latest := map[latestKey]string{}
	var opErr error
	// One time for the transaction's events: they commit together (and
	// the store binds it once per statement).
	now := time.Now().UTC()
	// fenced are the sessions this transaction has checked the leases of
	// (Cluster only): the ops' sessions first, then any other a draft
	// names, before the commit.
	var fenced map[string]bool
	// mark names the transaction to ask about should its connection
	// drop (taken late, with the event ids where there are some, to cost
	// no round trip: a connection lost before it leaves a transaction
	// its backend may hold open until idle_in_transaction_session_timeout
	// ends it); applied is set once every statement before the COMMIT
	// succeeded.
	var mark store.TxMark
	applied := false
	err := w.st.Tx(ctx, func(tx *store.Store) error {
		if w.cfg.Cluster != nil {
			fenced = map[string]bool{}
			ids := make([]string, 0, len(batch))
			for _, o := range batch {
				if id := o.change.SessionID(); id != "" && !fenced[id] {
					fenced[id] = true
					ids = append(ids, id)
				}
			}
			if err := w.fence(ctx, tx, ids); err != nil {
				opErr = err
				return errOpFailed
			}
			for _, o := range batch {
				if id := o.change.SessionID(); o.gen != 0 && o.gen != w.gens[id] {
					opErr = errcode.New(errcode.SessionLeaseLost, "session %s's change was made under a lease this node has lost since; nothing was written", id).
						With("sessions", []string{id})
					return errOpFailed
				}
			}
		}
		// drafts is reused from op to op (Apply's emit only appends).
		// emit projects each event as it is emitted (project.go), so
		// what an Apply reads after emitting sees the event's rows, and a
		// projection completes its payload before number encodes it. A
		// Latest draft, which number may drop, has no rows. A projection
		// may emit the events its event implies (a policy): they follow
		// it.
		drafts := w.drafts[:0]
		var projErr error
		var emit Emit
		emit = func(d Draft) {
			if projErr != nil {
				return
			}
			if projErr = typeDraft(&d); projErr != nil {
				return
			}
			drafts = append(drafts, d)
			if !d.Latest {
				fillDraft(d)
				projErr = project(ctx, tx, d, emit)
			}
		}
		defer func() { clear(drafts[:cap(drafts)]); w.drafts = drafts[:0] }()
		for i, o := range batch {
			drafts = drafts[:0]
			err := o.change.Apply(ctx, tx, emit)
			if projErr != nil {
				// The first failure: what the Apply did after it (such as
				// a row naming the row the projection could not write)
				// fails because of it.
				err = projErr
			}
			if err != nil {
				opErr = err
				return errOpFailed
			}
			for _, d := range drafts {
				e, keep, err := w.number(tx, seqs, latest, d, now, fenced)
				if err != nil {
					return err
				}
				if !keep {
					continue
				}
				evs = append(evs, e)
				dom, _ := d.Payload.(session.EventPayload)
				doms = append(doms, dom)
			}
			ends[i] = len(evs)
		}
		if w.cfg.Cluster != nil {
			var late []string
			for id, checked := range fenced {
				if !checked {
					late = append(late, id)
				}
			}
			if err := w.fence(ctx, tx, late); err != nil {
				opErr = err
				return errOpFailed
			}
		}
		if w.cfg.Cluster != nil && len(evs) > 0 {
			// Last before the commit: an id taken is held by a
			// running transaction, which the feeds wait for, for as
			// short a time as can be.
			ids, m, err := w.cfg.Cluster.ReserveIDs(ctx, tx, len(evs))
			if err != nil {
				return err
			}
			mark = m
			for i := range evs {
				evs[i].ID = ids[i]
			}
			w.lastID = evs[len(evs)-1].ID
		}
		if mark.TxID == 0 {
			// No ids reserved (no events, or one node alone): a query of
			// its own, on PostgreSQL only.
			var err error
			if mark, err = tx.MarkTx(ctx); err != nil {
				return err
			}
		}
		if err := tx.AppendEvents(ctx, evs); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		endID := w.lastID
		w.lastID = startID
		if store.IsBusy(err) || store.IsBusy(opErr) {
			w.busy.Add(1)
		}
		if (store.IsUnavailable(err) || store.IsUnavailable(opErr)) && !w.isClosing() {
			// Not the ops' failure: they are committed again (untilReachable),
			// unless this attempt's COMMIT, in doubt, turns out to have
			// made it.
			w.lastUnreachable = err
			clear(w.lastSeq)
			clear(w.latest)
			w.doubt = nil
			if mark.TxID != 0 {
				w.doubt = &inDoubt{mark: mark, applied: applied, out: outcome{evs: evs, doms: doms, ops: batch, ends: ends},
					seqs: seqs, latest: latest, lastID: endID}
			}
			return errUnreachable
		}
		if opErr == nil {
			opErr = err
			w.cfg.Logger.Error("event batch failed", "ops", len(batch), "err", err)
			clear(w.lastSeq) // reload from the database on next use
			clear(w.latest)
		}
		if len(batch) == 1 {
			opErr = w.failed(batch[0].change, opErr)
			w.outcomes <- outcome{ops: batch, err: opErr}
		}
		return opErr
	}
	w.settled(outcome{evs: evs, doms: doms, ops: batch, ends: ends}, seqs, latest)
	return nil
}

// settled takes a committed transaction's numbering into the writer's
// caches and hands its outcome to the publisher.
func (w *Writer) settled(out outcome, seqs map[string]int64, latest map[latestKey]string) {
	for sid, seq := range seqs {
		w.lastSeq[sid] = seq
	}
	maps.Copy(w.latest, latest)
	w.committed.Add(int64(len(out.evs)))
	w.batches.Add(1)
	w.outcomes <- out
}

// fence has the cluster check sessions' leases and drops the writer's
// caches of any whose lease generation changed since they were read.
func (w *Writer) fence(ctx context.Context, tx *store.Store, sessions []string) error {
	if len(sessions) == 0 {
		return nil
	}
	gens, err := w.cfg.Cluster.Fence(ctx, tx, sessions)
	if err != nil {
		return err
	}
	for id, gen := range gens {
		if old, ok := w.gens[id]; !ok || old != gen {
			delete(w.lastSeq, id)
			w.dropLatest(id)
			w.gens[id] = gen
		}
	}
	return nil
}

// dropLatest forgets the session's cached last payloads.
func (w *Writer) dropLatest(sessionID string) {
	for k := range w.latest {
		if k.session == sessionID {
			delete(w.latest, k)
		}
	}
}

// failed logs and counts a change that could not be written and returns
// the error its submitter gets. A store failure (locked past the busy
// timeout, a constraint, a full disk) becomes errcode.StoreWriteFailed, so
// a client is told its change was not stored, never a vague internal
// error; a domain error (an unknown task) passes through unchanged.
func (w *Writer) failed(c Change, err error) error {
	code := errcode.CodeOf(err)
	if code == errcode.Internal {
		err = errcode.Wrap(errcode.StoreWriteFailed, err, "the change could not be stored; nothing of it was recorded")
		code = errcode.StoreWriteFailed
	}
	w.failMu.Lock()
	w.failures[string(code)]++
	w.failMu.Unlock()
	level := slog.LevelInfo // a refusal the submitter reports to its client
	if code == errcode.StoreWriteFailed {
		level = slog.LevelError
	}
	w.cfg.Logger.Log(writerCtx, level, "write failed", "session", c.SessionID(), "change", changeName(c), "code", code, "err", err)
	return err
}

// changeName names a change's type for the log.
func changeName(c Change) string {
	if _, ok := c.(funcChange); ok {
		return "func"
	}
	return fmt.Sprintf("%T", c)
}
