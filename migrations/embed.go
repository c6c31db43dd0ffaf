// Package migrations holds the numbered goose SQL migrations of tetherd's
// database: SQLite's at the root, PostgreSQL's in postgres/ (numbered on
// their own; a change to the schema is a new file in both). They are embedded in the binary so a tetherd always
// carries exactly the schema it was built for, and internal/store applies
// them at start-up (and refuses a database newer than the highest file here).
//
// Files are named NNNNN_description.sql; each has a "-- +goose Up" and a
// "-- +goose Down" section. Never edit a released migration: add a new one.
package migrations

import "embed"

// FS contains every migration file (*.sql) at its root, ready for
// goose.NewProvider.
//
//go:embed *.sql
var FS embed.FS

// Postgres contains PostgreSQL's migration files (postgres/*.sql), for
// several nodes sharing one database.
//
//go:embed postgres/*.sql
var Postgres embed.FS
