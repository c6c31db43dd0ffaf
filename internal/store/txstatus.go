package store

import (
	"context"
	"database/sql"
)

// TxMark names a running PostgreSQL transaction from outside it: its
// transaction id and the backend running it. A writer takes one before
// its COMMIT so that, should the connection drop while the COMMIT is in
// flight, it can ask afterwards whether the transaction committed
// instead of doing it again (an ambiguous commit).
type TxMark struct {
	// TxID is txid_current(): zero on SQLite, where a commit is never in
	// doubt (the file is local; a failed commit is a failed commit).
	TxID int64
	// PID is the backend's process id (pg_backend_pid()).
	PID int64
}

// TxState is what the database says of a marked transaction.
type TxState int

// The states of a marked transaction.
const (
	// TxAborted: it rolled back (or never got anywhere): do it again.
	TxAborted TxState = iota
	// TxCommitted: it committed: doing it again would write it twice.
	TxCommitted
	// TxRunning: its backend has not noticed the connection is gone yet.
	TxRunning
)

// MarkTx returns the running transaction's mark (a zero mark on SQLite).
// It must run inside the transaction (Tx).
func (s *Store) MarkTx(ctx context.Context) (TxMark, error) {
	if s.dialect != DialectPostgres {
		return TxMark{}, nil
	}
	var m struct {
		TxID int64 `gorm:"column:txid"`
		PID  int64 `gorm:"column:pid"`
	}
	// gorm's Scan, not Row: a Row whose query lost its connection panics
	// on Scan.
	if err := s.db.WithContext(ctx).Raw(`SELECT txid_current() AS txid, pg_backend_pid() AS pid`).Scan(&m).Error; err != nil {
		return TxMark{}, wrapErr(err, "mark transaction")
	}
	return TxMark{TxID: m.TxID, PID: m.PID}, nil
}

// TxStateOf asks the database what became of a marked transaction, from
// a new connection. One still running on a backend whose client went
// away is ended (pg_terminate_backend, which only ever aborts what has
// not committed) and asked about again, so the answer is final unless it
// is TxRunning (the backend could not be ended yet: ask again later).
func (s *Store) TxStateOf(ctx context.Context, m TxMark) (TxState, error) {
	st, err := s.txState(ctx, m)
	if err != nil || st != TxRunning {
		return st, err
	}
	// Only the backend still running that transaction: a pid freed and
	// taken by another backend since is left alone. backend_xid is the
	// 32-bit xid; txid_current() adds the epoch above it.
	err = s.db.WithContext(ctx).Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid = ? AND backend_xid::text = (?::bigint % 4294967296)::text`, m.PID, m.TxID).Error
	if err != nil {
		return TxRunning, wrapErr(err, "end the backend of a transaction in doubt")
	}
	return s.txState(ctx, m)
}

func (s *Store) txState(ctx context.Context, m TxMark) (TxState, error) {
	var status sql.NullString
	if err := s.db.WithContext(ctx).Raw(`SELECT txid_status(?)`, m.TxID).Scan(&status).Error; err != nil {
		return TxRunning, wrapErr(err, "ask what became of a transaction")
	}
	switch status.String {
	case "committed":
		return TxCommitted, nil
	case "in progress":
		return TxRunning, nil
	default: // "aborted", or NULL: too old to tell, which only an abort left unasked for this long
		return TxAborted, nil
	}
}
