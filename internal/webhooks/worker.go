package webhooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// saveEvery bounds how long a worker's position may lag what it
// delivered: a crash redelivers at most this much (with the same
// webhook-id each), and a busy webhook saves a few times a second, not
// once per event.
const saveEvery = 250 * time.Millisecond

// pageSize is how many global events a worker reads at a time.
const pageSize = 256

// worker delivers one webhook's events, one at a time, in the log's
// order, from its saved position.
type worker struct {
	d    *Dispatcher
	hook store.Webhook

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by run.
	progress store.WebhookProgress
	attempts []store.WebhookDelivery
	dirty    bool
	saved    time.Time
	// saving is the save in flight (nil: none): saves are not waited
	// for on the delivery path, which a commit would hold up.
	saving *events.Pending
}

func newWorker(d *Dispatcher, h store.Webhook) *worker {
	return &worker{d: d, hook: h, wake: make(chan struct{}, 1), done: make(chan struct{}),
		progress: store.WebhookProgress{LastEventID: h.LastEventID, Epoch: h.Epoch, Failures: h.Failures, LastError: h.LastError,
			NextAttemptAt: h.NextAttemptAt}}
}

// same reports whether h is the webhook this worker delivers as it was
// when the worker started (what its own saves change aside).
func (w *worker) same(h store.Webhook) bool {
	return h.URL == w.hook.URL && h.Secret == w.hook.Secret && slices.Equal(h.Events, w.hook.Events)
}

func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// finished reports whether run has returned (the webhook was disabled, or
// the database failed it).
func (w *worker) finished() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop ends run and waits for it (it saves its position first).
func (w *worker) stop() {
	w.cancel()
	<-w.done
}

// run delivers until ctx ends (stop) or the webhook is disabled.
func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	defer w.save(true) // what was delivered is not delivered again
	log := w.d.cfg.Logger.With("webhook", w.hook.ID)
	epoch, err := w.d.cfg.Store.GlobalEpoch(ctx)
	if err != nil {
		return
	}
	if w.progress.Epoch != epoch {
		// A new global log (the old one was reset): its events from the
		// first.
		w.progress.LastEventID, w.progress.Epoch, w.dirty = 0, epoch, true
	}
	if at := w.progress.NextAttemptAt; at != nil && w.progress.Failures > 0 {
		if !w.sleep(ctx, time.Until(*at)) {
			return
		}
	}
	for ctx.Err() == nil {
		evs, err := w.read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("webhooks: cannot read the log; trying again", "err", err)
				w.sleep(ctx, time.Second)
			}
			continue
		}
		if len(evs) == 0 {
			w.idle(ctx)
			continue
		}
		for _, e := range evs {
			if msg, ok := MessageOf(epoch, e, w.hook.Events); ok && !w.deliver(ctx, msg, e.ID) {
				return
			}
			w.progress.LastEventID, w.dirty = e.ID, true
			if time.Since(w.saved) >= saveEvery {
				w.save(false)
			}
		}
	}
}

// read is the next page of the global log after the position, up to
// the horizon in a cluster.
func (w *worker) read(ctx context.Context) ([]store.Event, error) {
	evs, err := w.d.cfg.Store.ListGlobalEvents(ctx, w.progress.LastEventID, pageSize)
	if err != nil || w.d.cfg.Horizon == nil || len(evs) == 0 {
		return evs, err
	}
	top, err := w.d.cfg.Horizon(ctx)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(evs) && evs[n].ID <= top {
		n++
	}
	return evs[:n], nil
}

// deliver sends msg until it is delivered (true), or ctx ends or the
// webhook is disabled (false).
func (w *worker) deliver(ctx context.Context, msg Message, eventID int64) bool {
	for {
		d := attemptPost(ctx, w.d, w.hook, msg, eventID, w.progress.Failures+1)
		if ctx.Err() != nil && !d.OK {
			return false // stopping: this attempt does not count
		}
		w.attempts = append(w.attempts, d)
		w.dirty = true
		if d.OK {
			w.d.delivered.Add(1)
		} else {
			w.d.failed.Add(1)
		}
		if d.OK {
			at := d.At
			w.progress.Failures, w.progress.LastError, w.progress.NextAttemptAt, w.progress.LastDeliveredAt = 0, "", nil, &at
			return true
		}
		w.progress.Failures++
		w.progress.LastError = d.Error
		if w.progress.Failures >= w.d.cfg.MaxFailures {
			w.progress.Disable = fmt.Sprintf("%d failed attempts in a row delivering event %d; the last: %s", w.progress.Failures, eventID, d.Error)
			w.d.cfg.Logger.Warn("webhooks: disabled", "webhook", w.hook.ID, "reason", w.progress.Disable)
			return false
		}
		wait := backoff(w.d.cfg.RetryBase, w.d.cfg.RetryMax, w.progress.Failures)
		next := time.Now().Add(wait)
		w.progress.NextAttemptAt = &next
		w.save(false)
		if !w.sleep(ctx, wait) {
			return false
		}
	}
}

// backoff is the wait after the nth failed attempt in a row: base
// doubled n-1 times, at most most, and a random half of it taken off so
// that webhooks failing together do not come back together.
func backoff(base, most time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return d/2 + rand.N(d/2+1)
}

func (w *worker) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// idle waits for a wake-up (new events) or ctx's end, saving what is
// unsaved once saveEvery has passed since the last save.
func (w *worker) idle(ctx context.Context) {
	var due <-chan time.Time
	if w.dirty {
		left := saveEvery - time.Since(w.saved)
		if left <= 0 {
			w.save(false)
		} else {
			t := time.NewTimer(left)
			defer t.Stop()
			due = t.C
		}
	}
	select {
	case <-ctx.Done():
	case <-w.wake:
	case <-due:
		w.save(false)
	}
}

// save writes the position, the failure state and the attempts since
// the last save, through the writer, one save in flight at a time; wait
// waits for it (as the worker stops), else a save still in flight puts
// this one off (the next writes the newer position).
func (w *worker) save(wait bool) {
	if w.saving != nil {
		if !wait {
			select {
			case <-w.saving.Done():
			default:
				return
			}
		}
		w.settle()
	}
	if !w.dirty {
		return
	}
	p, attempts, id := w.progress, w.attempts, w.hook.ID
	w.attempts, w.dirty, w.saved = nil, false, time.Now()
	w.saving = w.d.cfg.Writer.Submit(func(tx *store.Store, _ events.Emit) error {
		return tx.SaveWebhookProgress(context.Background(), id, p, attempts)
	})
	if wait {
		w.settle()
	}
}

// settle waits for the save in flight; one that failed leaves the
// position to the next save (its attempts are not logged).
func (w *worker) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.saving.Wait(ctx); err != nil {
		w.d.cfg.Logger.Warn("webhooks: cannot save the position; its events may be delivered again", "webhook", w.hook.ID, "err", err)
		w.dirty = true
	}
	w.saving = nil
}

// attemptPost POSTs msg to h's URL with the Standard Webhooks headers
// and says how it went; 2xx is a delivery.
func attemptPost(ctx context.Context, d *Dispatcher, h store.Webhook, msg Message, eventID int64, attempt int) store.WebhookDelivery {
	start := time.Now()
	out := store.WebhookDelivery{WebhookID: h.ID, MessageID: msg.ID, EventType: msg.Type, EventID: eventID, Attempt: attempt, At: start}
	defer func() { out.Duration = time.Since(start) }()
	ts := start.Unix()
	sig, err := Sign(h.Secret, msg.ID, ts, msg.Body)
	if err != nil {
		out.Error = "the webhook's secret is not a whsec_ secret"
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(msg.Body))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msg.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	if d.cfg.UserAgent != "" {
		req.Header.Set("User-Agent", d.cfg.UserAgent)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is kept
	_ = resp.Body.Close()
	out.StatusCode = resp.StatusCode
	out.OK = resp.StatusCode >= 200 && resp.StatusCode < 300
	if !out.OK {
		out.Error = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return out
}
