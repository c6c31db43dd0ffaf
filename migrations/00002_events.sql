-- Durable event log (DESIGN.md section 3).
--
-- id is the global id, assigned by the single writer in commit order; the
-- global stream's cursor runs over it. seq is per session and gapless; a
-- session stream's cursor is <sessions.event_epoch>:<seq>. Task-level events
-- have no session and no seq. is_global marks the events the global stream
-- (/events) carries. No foreign key to sessions: the log outlives nothing it
-- describes, and retention prunes it explicitly.

-- +goose Up
CREATE TABLE events (
    id         INTEGER NOT NULL PRIMARY KEY,
    session_id TEXT,
    seq        INTEGER CHECK (seq IS NULL OR seq > 0),
    type       TEXT NOT NULL CHECK (type <> ''),
    prompt_id  TEXT,
    is_global  INTEGER NOT NULL DEFAULT 0 CHECK (is_global IN (0, 1)),
    payload    TEXT NOT NULL CHECK (json_valid(payload)),
    created_at TEXT NOT NULL,
    CHECK ((session_id IS NULL) = (seq IS NULL))
);
CREATE UNIQUE INDEX events_session_seq_idx ON events (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX events_global_idx ON events (id) WHERE is_global = 1;

-- Small key/value facts about this database, e.g. the global stream epoch.
CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE meta;
DROP INDEX events_global_idx;
DROP INDEX events_session_seq_idx;
DROP TABLE events;
