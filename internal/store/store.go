// Package store is tetherd's durable state: tasks, sessions, executor rows,
// turns and the transcript, kept in SQLite through gorm.
//
// Nothing gorm- or database/sql-shaped leaves this package: callers see the
// record types of records.go and *errcode.Error values, so the rest of the
// daemon (and a future Postgres backend) does not depend on the ORM.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pressly/goose/v3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/migrations"
)

// slowQueryThreshold is the duration above which a statement is logged; a
// local SQLite file answering slower than this means contention or a sick disk.
const slowQueryThreshold = 200 * time.Millisecond

// Store is the SQLite-backed repository. It is safe for concurrent use; SQLite
// serialises writers (every transaction is BEGIN IMMEDIATE, so read-then-write
// sequences inside one transaction cannot race).
type Store struct {
	db *gorm.DB
	// rdb is a second pool for snapshot reads: its transactions are
	// deferred, so WAL readers never wait for the writer's lock.
	rdb *gorm.DB
	// inTx marks a Store bound to a transaction (Tx): multi-statement
	// operations then run in it directly instead of nesting savepoints.
	inTx bool
	// stmts counts the SQL statements both pools have run (shared by the
	// Stores bound to transactions).
	stmts *atomic.Int64
	// msgIDs is the last message id handed out (NewMessageID), shared
	// like stmts.
	msgIDs *atomic.Int64
	// chunks are the chunk rows AppendChunk queued in this transaction
	// (Stores bound to a transaction only).
	chunks []pendingChunk
	// offsets are the host offsets SetExecutorOffset queued in this
	// transaction, the latest per session.
	offsets []pendingOffset
	// replay holds the replay's statements and ckpt checkpoints the WAL
	// (both nil in Stores bound to a transaction).
	replay *replayer
	ckpt   *checkpointer
	// dialect is the database's ("" is SQLite).
	dialect Dialect
	// walPath is the SQLite database's write-ahead log, which Sync makes
	// durable ("" on PostgreSQL and in Stores bound to a transaction).
	walPath string
	// closed makes Close idempotent (nil in Stores bound to a
	// transaction, which own no pool).
	closed *atomic.Bool
}

// Statements is how many SQL statements the store has run since Open, on
// both pools and in every transaction. Tests use it to check that a
// request costs a fixed number of queries, whatever the data's size.
func (s *Store) Statements() int64 { return s.stmts.Load() }

// Open opens (creating if needed) the SQLite database at path and brings its
// schema up to date. It refuses, with errcode.DatabaseTooNew, a database
// migrated by a newer tetherd, since this binary cannot know what the newer
// schema means.
func Open(ctx context.Context, path string) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: resolve database path %q", path)
	}
	// 0700: the database holds transcripts and agent environments.
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: create database directory")
	}
	if err := privateDBFiles(abs); err != nil {
		return nil, err
	}

	stmts := new(atomic.Int64)
	ql := slowQueryLogger{log: slog.Default(), threshold: slowQueryThreshold, stmts: stmts}
	registerWriterDriver()
	gdb, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: writerDriver, DSN: dsn(abs)}), &gorm.Config{
		Logger: ql,
		// The writer runs the same few statements all day (event inserts,
		// chunk appends): prepare them once per connection.
		PrepareStmt: true,
		// Single statements are atomic in SQLite; multi-statement operations
		// open their own transactions explicitly.
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: open database %s", abs)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: open database %s", abs)
	}
	if err := pinTransactionContexts(gdb); err != nil {
		_ = sqlDB.Close()
		return nil, errcode.Wrap(errcode.Internal, err, "store: open database %s", abs)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, errcode.Wrap(errcode.Internal, err, "store: open database %s", abs)
	}
	if err := migrate(ctx, gdb); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	if err := adoptRestoredBackup(ctx, gdb); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	if err := prepareOnPool(ctx, gdb, slices.Concat(messageStatements, eventStatements, recoveryStatements, updateStatements)...); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	msgIDs := new(atomic.Int64)
	var lastMsg int64
	if err := gdb.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) FROM messages`).Scan(&lastMsg).Error; err != nil {
		_ = sqlDB.Close()
		return nil, internal(err, "read last message id")
	}
	msgIDs.Store(lastMsg)
	rdb, err := gorm.Open(sqlite.Open(readDSN(abs)), &gorm.Config{
		Logger:                 ql,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, errcode.Wrap(errcode.Internal, err, "store: open read pool %s", abs)
	}
	closeAll := func() {
		_ = sqlDB.Close()
		if r, err := rdb.DB(); err == nil {
			_ = r.Close()
		}
	}
	readDB, err := rdb.DB()
	if err != nil {
		closeAll()
		return nil, errcode.Wrap(errcode.Internal, err, "store: open read pool %s", abs)
	}
	replay, err := openReplayer(ctx, abs, readDB)
	if err != nil {
		closeAll()
		return nil, err
	}
	ckpt, err := newCheckpointer(abs)
	if err != nil {
		replay.close()
		closeAll()
		return nil, err
	}
	return &Store{db: gdb, rdb: rdb, stmts: stmts, msgIDs: msgIDs, replay: replay, ckpt: ckpt, closed: new(atomic.Bool), walPath: abs + "-wal"}, nil
}

// pinTransactionContexts makes every statement that runs inside a write
// transaction ignore its caller's cancellation (keeping its values): the
// event writer batches many clients' changes in one transaction, and one
// statement failing because its request went away would roll back all the
// others with it. A transaction ends whole, by commit or rollback; outside
// one, a statement still stops when its caller does.
func pinTransactionContexts(db *gorm.DB) error {
	pin := func(g *gorm.DB) {
		if _, inTx := g.Statement.ConnPool.(gorm.TxCommitter); inTx && g.Statement.Context != nil {
			g.Statement.Context = context.WithoutCancel(g.Statement.Context)
		}
	}
	cb := db.Callback()
	const name = "tether:pin_tx_context"
	return errors.Join(
		cb.Create().Before("gorm:create").Register(name, pin),
		cb.Query().Before("gorm:query").Register(name, pin),
		cb.Update().Before("gorm:update").Register(name, pin),
		cb.Delete().Before("gorm:delete").Register(name, pin),
		cb.Row().Before("gorm:row").Register(name, pin),
		cb.Raw().Before("gorm:raw").Register(name, pin),
	)
}

// dsn builds a go-sqlite3 DSN. The pragmas are DSN parameters so that they
// apply to every pooled connection, not only the first one. The path is
// URI-escaped so names containing '?' or '#' still work.
func dsn(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	// No per-connection mutex in SQLite: database/sql hands a connection
	// to one goroutine at a time, and every SQLite call paid for a lock
	// it never needed.
	q.Set("_mutex", "no")
	// Take the write lock at BEGIN: read-modify-write transactions (turn
	// seq, chunk aggregation, permission resolution) then cannot deadlock or
	// fail with SQLITE_BUSY half-way through.
	q.Set("_txlock", "immediate")
	u.RawQuery = q.Encode()
	return u.String()
}

// readDSN is dsn for the snapshot pool: deferred transactions that only read.
func readDSN(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Set("_busy_timeout", "5000")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "deferred")
	q.Set("_query_only", "1")
	u.RawQuery = q.Encode()
	return u.String()
}

// migrate applies the embedded goose migrations after checking that the
// database is not from the future.
func migrate(ctx context.Context, gdb *gorm.DB) error {
	sqlDB, err := gdb.DB()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: migrate")
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, sqlDB, migrations.FS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: load migrations")
	}
	return upTo(ctx, provider, "use another --data-dir")
}

// Close releases the database. The Store must not be used afterwards.
func (s *Store) Close() error {
	if s.closed == nil || !s.closed.CompareAndSwap(false, true) {
		return nil // closed already (or bound to a transaction)
	}
	if s.ckpt != nil {
		s.ckpt.close() // first: it must not run against a closing database
	}
	if s.replay != nil {
		s.replay.close()
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: close")
	}
	if err := sqlDB.Close(); err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: close")
	}
	if s.rdb != nil && s.rdb != s.db {
		if r, err := s.rdb.DB(); err == nil {
			_ = r.Close()
		}
	}
	return nil
}

// Tx runs fn with a Store bound to one write transaction: everything fn
// does commits together or not at all. The event writer uses it to commit
// transcript rows and the events describing them atomically.
func (s *Store) Tx(ctx context.Context, fn func(tx *Store) error) error {
	if s.inTx {
		return fn(s)
	}
	err := s.db.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		tx := &Store{db: g, rdb: g, inTx: true, stmts: s.stmts, msgIDs: s.msgIDs, dialect: s.dialect}
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.flushChunks(ctx); err != nil { // the chunk rows AppendChunk queued
			return err
		}
		return tx.flushOffsets(ctx)
	})
	if err != nil {
		return internal(err, "transaction")
	}
	return nil
}

// Snapshot runs fn with a Store bound to one read transaction, so that
// several reads (a transcript and the event head it matches) see the same
// committed state. fn must not write.
func (s *Store) Snapshot(ctx context.Context, fn func(r *Store) error) error {
	var opts []*sql.TxOptions
	if s.dialect == DialectPostgres {
		// One snapshot for the whole transaction (PostgreSQL's default
		// takes one per statement).
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	err := s.rdb.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		return fn(&Store{db: g, rdb: g, stmts: s.stmts, msgIDs: s.msgIDs, dialect: s.dialect})
	}, opts...)
	if err != nil {
		return internal(err, "snapshot")
	}
	return nil
}

// now is the store's clock: UTC so stored text sorts, and without a
// monotonic reading so values round-trip exactly.
func now() time.Time { return time.Now().UTC() }

// transaction runs fn in one (immediate) transaction and translates what it
// returns; fn may already return *errcode.Error values, which pass through.
func (s *Store) transaction(ctx context.Context, op string, fn func(tx *gorm.DB) error) error {
	if s.inTx {
		// Already atomic with the caller's transaction: a savepoint per
		// operation would only cost time on the writer's hot path.
		if err := fn(s.db.WithContext(ctx)); err != nil {
			return internal(err, op)
		}
		return nil
	}
	err := s.db.WithContext(ctx).Transaction(fn)
	if err != nil {
		return internal(err, op)
	}
	return nil
}

// slowQueryLogger is gorm's logger: it reports only slow statements. Errors
// are not logged here because they are returned, translated, to callers
// that know whether they are expected (a prompt id conflict is not a fault).
type slowQueryLogger struct {
	log       *slog.Logger
	threshold time.Duration
	stmts     *atomic.Int64
}

var _ logger.Interface = slowQueryLogger{}

// LogMode is required by gorm; the level is fixed.
func (l slowQueryLogger) LogMode(logger.LogLevel) logger.Interface { return l }

// Info is dropped: gorm's informational messages are noise for a daemon.
func (l slowQueryLogger) Info(context.Context, string, ...any) {}

// Warn forwards gorm's own warnings.
func (l slowQueryLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, "store: "+fmt.Sprintf(msg, args...))
}

// Error is dropped; see the type comment.
func (l slowQueryLogger) Error(context.Context, string, ...any) {}

// Trace counts every statement and logs those slower than the threshold.
func (l slowQueryLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	l.stmts.Add(1)
	elapsed := time.Since(begin)
	if elapsed <= l.threshold {
		return
	}
	sql, rows := fc()
	l.log.WarnContext(ctx, "store: slow query", "elapsed", elapsed, "rows", rows, "sql", sql)
}

// ParamsFilter keeps bound values out of logged SQL: they include prompts,
// transcripts and agent environment variables.
func (l slowQueryLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
