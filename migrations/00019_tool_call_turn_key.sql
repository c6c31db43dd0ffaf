-- A tool call is its turn's: its key is (session_id, prompt_id,
-- tool_call_id). ACP promises tool call ids unique within one ACP session
-- only, and a tether session spans several (a restore by history
-- injection, or any new agent process, opens a fresh one, whose agent may
-- number its tool calls from the start again); a turn runs on one ACP
-- session (an agent lost mid-turn ends it; a continuation is a new turn).
-- Keyed by session alone, a later turn's `tool-1` overwrote an earlier
-- turn's. SQLite cannot change a PRIMARY KEY in place: the table is
-- rebuilt, its rows (and their rowids, which break ties in the order calls
-- started) kept.

-- +goose Up
CREATE TABLE tool_calls_new (
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    prompt_id    TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    -- ACP tool kind (read, edit, execute, ...): free text, the agent decides.
    kind         TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
    interrupted  INTEGER NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
    content      TEXT CHECK (content IS NULL OR json_valid(content)),
    locations    TEXT CHECK (locations IS NULL OR json_valid(locations)),
    raw_input    TEXT CHECK (raw_input IS NULL OR json_valid(raw_input)),
    raw_output   TEXT CHECK (raw_output IS NULL OR json_valid(raw_output)),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, prompt_id, tool_call_id)
);
INSERT INTO tool_calls_new (rowid, session_id, tool_call_id, prompt_id, title, kind, status, interrupted,
    content, locations, raw_input, raw_output, created_at, updated_at)
SELECT rowid, session_id, tool_call_id, prompt_id, title, kind, status, interrupted,
    content, locations, raw_input, raw_output, created_at, updated_at
FROM tool_calls;
DROP TABLE tool_calls;
ALTER TABLE tool_calls_new RENAME TO tool_calls;
CREATE INDEX tool_calls_session_created_idx ON tool_calls (session_id, created_at);
CREATE INDEX tool_calls_session_prompt_idx ON tool_calls (session_id, prompt_id, created_at);

-- +goose Down
-- Keyed by session again, a session keeps one call of each id: the one
-- that started last (as the old key's merge let a later call overwrite).
CREATE TABLE tool_calls_old (
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    prompt_id    TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    kind         TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
    interrupted  INTEGER NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
    content      TEXT CHECK (content IS NULL OR json_valid(content)),
    locations    TEXT CHECK (locations IS NULL OR json_valid(locations)),
    raw_input    TEXT CHECK (raw_input IS NULL OR json_valid(raw_input)),
    raw_output   TEXT CHECK (raw_output IS NULL OR json_valid(raw_output)),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, tool_call_id)
);
INSERT INTO tool_calls_old (rowid, session_id, tool_call_id, prompt_id, title, kind, status, interrupted,
    content, locations, raw_input, raw_output, created_at, updated_at)
SELECT rowid, session_id, tool_call_id, prompt_id, title, kind, status, interrupted,
    content, locations, raw_input, raw_output, created_at, updated_at
FROM tool_calls
WHERE rowid IN (SELECT max(rowid) FROM tool_calls GROUP BY session_id, tool_call_id);
DROP TABLE tool_calls;
ALTER TABLE tool_calls_old RENAME TO tool_calls;
CREATE INDEX tool_calls_session_created_idx ON tool_calls (session_id, created_at);
CREATE INDEX tool_calls_session_prompt_idx ON tool_calls (session_id, prompt_id, created_at);
