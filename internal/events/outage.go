package events

import (
	"errors"
	"time"

	"github.com/tether/tether/internal/store"
)

// inDoubt is a transaction whose connection dropped: after its last
// statement, its COMMIT may have reached the database or not; before it,
// its backend may still hold it open (and the rows it wrote locked),
// not knowing its client is gone. The writer asks the database which
// (store.TxStateOf, which ends a transaction left running) before it
// runs the batch again, so a batch is never written twice (the events
// once more, under new numbers), nor reported failed when it is stored,
// nor held up behind its own first attempt.
type inDoubt struct {
	mark store.TxMark
	// applied: every statement before the COMMIT succeeded, so out is
	// whole (otherwise the transaction cannot have committed).
	applied bool
	// out is what the transaction would have handed the publisher, and
	// seqs, latest and lastID what it would have left in the writer's
	// caches: all of it holds if it committed.
	out    outcome
	seqs   map[string]int64
	latest map[latestKey]string
	lastID int64
}

// untilReachable is commitTx, done again while it fails for want of the
// database. A transaction that may have committed as the connection
// dropped is not done again until the database says it did not.
func (w *Writer) untilReachable(batch []op) error {
	err := w.commitTx(batch)
	if !errors.Is(err, errUnreachable) {
		return err
	}
	since := time.Now()
	w.unreachable.Store(true)
	w.cfg.Logger.Error("the database cannot be reached; holding the changes until it is back", "ops", len(batch), "err", w.lastUnreachable)
	for wait := 50 * time.Millisecond; errors.Is(err, errUnreachable); wait = min(2*wait, 2*time.Second) {
		select {
		case <-time.After(wait):
		case <-w.closing:
		}
		if w.doubt != nil {
			err = w.resolveDoubt()
			if err == nil && w.doubt == nil {
				break // it had committed
			}
			if err != nil && !w.isClosing() {
				continue // not known yet
			}
			// It had not committed (or the writer closes, and
			// commitTx fails what it cannot write): do it again.
			w.doubt = nil
		}
		err = w.commitTx(batch)
	}
	w.unreachable.Store(false)
	w.cfg.Logger.Warn("the database is back; the held changes are committed", "after", time.Since(since).Round(time.Millisecond))
	return err
}

// resolveDoubt asks the database what became of the transaction in
// doubt. Committed, it is taken as this attempt's success: its outcome
// goes to the publisher and w.doubt is cleared. Aborted, w.doubt stays
// for the caller to clear before it runs the batch again. Not known yet
// (the database is still away, or the transaction's backend still
// runs), it returns errUnreachable: wait and ask again.
func (w *Writer) resolveDoubt() error {
	st, err := w.st.TxStateOf(writerCtx, w.doubt.mark)
	if err != nil || st == store.TxRunning {
		if err != nil {
			w.lastUnreachable = err
		}
		return errUnreachable
	}
	if st == store.TxAborted {
		return nil
	}
	if !w.doubt.applied {
		// A transaction rolled back on its first failure never sends a
		// COMMIT; a database that says otherwise is not believed over
		// it, and the batch runs again.
		w.cfg.Logger.Error("the database says a transaction committed that never asked to; the batch is written again", "txid", w.doubt.mark.TxID)
		return nil
	}
	d := w.doubt
	w.doubt = nil
	w.cfg.Logger.Warn("a commit the connection dropped under had reached the database; it is not written again", "ops", len(d.out.ops), "events", len(d.out.evs))
	w.lastID = d.lastID
	w.settled(d.out, d.seqs, d.latest)
	return nil
}
