package store

import (
	"database/sql"

	"gorm.io/gorm"
)

// scanRow runs q, a query that returns at most one row, and scans that row
// into dest; no row is sql.ErrNoRows. It stands in for gorm's Row().Scan:
// with prepared statements (PrepareStmt, which both dialects use) gorm
// answers a statement the database could not prepare (a connection lost,
// a transaction aborted, a PostgreSQL error) with an empty *sql.Row, whose
// Scan panics on its nil rows instead of returning the error, and that
// panic took the whole daemon down. Rows returns the error.
func scanRow(q *gorm.DB, dest ...any) error {
	rows, err := q.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
