package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/migrations"
)

// Dialect is the database a Store runs on.
type Dialect string

// Dialects.
const (
	// DialectSQLite: one file in the data dir, one daemon (the default).
	DialectSQLite Dialect = "sqlite"
	// DialectPostgres: a PostgreSQL server several nodes share
	// (docs/scale-out.md).
	DialectPostgres Dialect = "postgres"
)

// Dialect is the database this Store runs on.
func (s *Store) Dialect() Dialect {
	if s.dialect == "" {
		return DialectSQLite
	}
	return s.dialect
}

// IsPostgresURL reports whether a --database value names a PostgreSQL
// server (postgres:// or postgresql://).
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// OpenPostgres connects to the PostgreSQL database at dsn (a postgres://
// URL) and brings its schema up to date with migrations/postgres, refusing
// (errcode.DatabaseTooNew) a schema a newer tetherd migrated. The same
// statements run as on SQLite (the schema keeps SQLite's column types);
// what only SQLite has — the WAL checkpointer, the online backup, the
// replay's page limit — is left out or refused.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	dsn, err := withSessionSettings(dsn)
	if err != nil {
		return nil, err
	}
	stmts := new(atomic.Int64)
	ql := slowQueryLogger{log: slog.Default(), threshold: slowQueryThreshold, stmts: stmts}
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "--database %s", redactURL(dsn))
	}
	pool := stdlib.OpenDB(*cc, stdlib.OptionAfterConnect(registerFlags))
	gdb, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), &gorm.Config{
		Logger:                 ql,
		PrepareStmt:            true,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: connect to %s", redactURL(dsn))
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "store: connect to %s", redactURL(dsn))
	}
	sqlDB.SetMaxOpenConns(16)
	sqlDB.SetMaxIdleConns(16)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	fail := func(err error) (*Store, error) {
		_ = sqlDB.Close()
		return nil, err
	}
	if err := pinTransactionContexts(gdb); err != nil {
		return fail(errcode.Wrap(errcode.Internal, err, "store: connect"))
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return fail(errcode.Wrap(errcode.Internal, err, "store: connect to %s", redactURL(dsn)))
	}
	if err := migratePostgres(ctx, sqlDB); err != nil {
		return fail(err)
	}
	hot := slices.Concat(messageStatements, eventStatements, recoveryStatements, updateStatements)
	for i, q := range hot {
		hot[i] = bindFor(gdb, q)
	}
	if err := prepareOnPool(ctx, gdb, hot...); err != nil {
		return fail(err)
	}
	return &Store{db: gdb, rdb: gdb, stmts: stmts, msgIDs: new(atomic.Int64), dialect: DialectPostgres, closed: new(atomic.Bool)}, nil
}

// withSessionSettings adds the connection settings every pooled
// connection needs: UTC, a bound on a transaction left idle (a node cut
// off mid-transaction must not hold its locks, nor the global stream's
// horizon, for longer than that), and the application name the event
// horizon knows the nodes' writers by.
func withSessionSettings(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || !IsPostgresURL(dsn) {
		return "", errcode.New(errcode.InvalidRequest, "--database %q is not a postgres:// URL", redactURL(dsn))
	}
	q := u.Query()
	if q.Get("timezone") == "" {
		q.Set("timezone", "UTC")
	}
	if q.Get("idle_in_transaction_session_timeout") == "" {
		q.Set("idle_in_transaction_session_timeout", "5000")
	}
	// The event horizon waits only for the writers of the nodes (the
	// backends of this application name), not for whatever else holds a
	// transaction open on the database.
	if q.Get("application_name") == "" {
		q.Set("application_name", "tetherd")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// redactURL hides a URL's password for messages and logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// migrationLock is the key of the advisory lock the nodes of one database
// take in turn to check and apply its migrations.
const migrationLock int64 = 0x7e7e_0001

// migratePostgres applies migrations/postgres after checking that the
// database is not from the future. Nodes starting at once on a fresh
// database take turns (a session advisory lock, waited for): two
// applying the same migration together would collide on the objects it
// creates, and the second must see the first's schema before it checks
// the version.
func migratePostgres(ctx context.Context, db *sql.DB) error {
	sub, err := fs.Sub(migrations.Postgres, "postgres")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: load migrations")
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: load migrations")
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: connect to take the migration lock")
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: take the migration lock")
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock); err != nil {
			// The lock is the session's: a connection that still holds
			// it must not go back to the pool, so it is closed.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return upTo(ctx, provider, "use another database")
}

// upTo refuses a database migrated past provider's last file, then
// applies what is missing (both dialects).
func upTo(ctx context.Context, provider *goose.Provider, elsewhere string) error {
	sources := provider.ListSources()
	maxVersion := sources[len(sources)-1].Version // NewProvider fails when there are none.
	current, err := provider.GetDBVersion(ctx)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: read database schema version")
	}
	if current > maxVersion {
		return errcode.New(errcode.DatabaseTooNew,
			"database schema version %d is newer than this tetherd supports (max %d); upgrade tetherd or %s",
			current, maxVersion, elsewhere).
			With("databaseVersion", current).
			With("supportedVersion", maxVersion)
	}
	if _, err := provider.Up(ctx); err != nil {
		return errcode.Wrap(errcode.Internal, err, "store: apply migrations")
	}
	return nil
}

// pgCode is the SQLSTATE of a PostgreSQL error, "" for any other error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATEs the store tells apart.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgSerialization       = "40001"
	pgDeadlock            = "40P01"
	pgLockNotAvailable    = "55P03"
)

// rebound caches each statement's PostgreSQL form (bindFor).
var rebound sync.Map

// bindFor is query with db's placeholders: as written (SQLite's ? and ?N)
// on SQLite, PostgreSQL's $1, $2, ... on PostgreSQL. The statements the
// store runs on a connection directly (without gorm, which binds its own)
// are written once, in SQLite's style, and converted here.
func bindFor(db *gorm.DB, query string) string {
	if db.Dialector == nil || db.Dialector.Name() != "postgres" {
		return query
	}
	if v, ok := rebound.Load(query); ok {
		return v.(string)
	}
	out := toDollar(query)
	rebound.Store(query, out)
	return out
}

// toDollar rewrites ? placeholders as $1, $2, ... in order, and ?N as $N.
// The store's statements hold no ? in a literal.
func toDollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		b.WriteByte('$')
		if j > i+1 {
			b.WriteString(q[i+1 : j])
			i = j - 1
			continue
		}
		n++
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// lockSession serialises the read-modify-write transactions of one
// session (a turn's seq is the session's highest plus one) as SQLite's
// immediate transactions serialise every writer: on PostgreSQL it locks
// the session's row until the transaction ends.
func (s *Store) lockSession(tx *gorm.DB, sessionID string) error {
	if s.dialect != DialectPostgres {
		return nil
	}
	if err := tx.Exec(`SELECT 1 FROM sessions WHERE id = ? FOR UPDATE`, sessionID).Error; err != nil {
		return internal(err, "lock session")
	}
	return nil
}
