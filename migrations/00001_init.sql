-- Initial schema of tetherd's SQLite database (DESIGN.md sections 2 and 5).
--
-- Conventions, relied on by internal/store:
--   * Timestamps are TEXT in fixed-width UTC RFC 3339 with nanoseconds
--     ("2006-01-02T15:04:05.000000000Z"), so lexical order is time order and
--     ORDER BY / keyset pagination work on the raw column.
--   * JSON is TEXT; nullable JSON columns distinguish "absent" (NULL) from an
--     empty value. List/map columns that are never absent default to '[]'/'{}'.
--   * Booleans are INTEGER 0/1.
--   * Every enum column carries a CHECK with exactly the values of the Go
--     constants in internal/store/records.go, so a bad value can never be
--     stored even by a buggy caller.
--   * Session-owned rows cascade with their session, sessions with their task;
--     the daemon itself never deletes executor rows (they are repaired).

-- +goose Up
CREATE TABLE tasks (
    id         TEXT NOT NULL PRIMARY KEY,
    title      TEXT NOT NULL DEFAULT '',
    workspace  TEXT NOT NULL DEFAULT '',
    state      TEXT NOT NULL DEFAULT 'TODO'
               CHECK (state IN ('TODO', 'IN_PROGRESS', 'REVIEW', 'COMPLETED', 'FAILED', 'CANCELLED')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX tasks_created_idx ON tasks (created_at DESC, id DESC);

CREATE TABLE sessions (
    id                     TEXT NOT NULL PRIMARY KEY,
    task_id                TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    -- No foreign key: profiles come from configuration and may disappear;
    -- the session must survive that and report the profile as gone.
    agent_profile_id       TEXT NOT NULL,
    cwd                    TEXT NOT NULL,
    title                  TEXT NOT NULL DEFAULT '',
    state                  TEXT NOT NULL DEFAULT 'CREATED'
                           CHECK (state IN ('CREATED', 'STARTING', 'RUNNING', 'WAITING_FOR_INPUT',
                                            'COMPLETED', 'FAILED', 'CANCELLED')),
    event_epoch            TEXT NOT NULL CHECK (event_epoch <> ''),
    -- Sent to the agent as mcpServers, which must never be null.
    mcp_servers            TEXT NOT NULL DEFAULT '[]'
                           CHECK (json_valid(mcp_servers) AND json_type(mcp_servers) = 'array'),
    additional_directories TEXT NOT NULL DEFAULT '[]'
                           CHECK (json_valid(additional_directories)),
    plan                   TEXT CHECK (plan IS NULL OR json_valid(plan)),
    prompted               INTEGER NOT NULL DEFAULT 0 CHECK (prompted IN (0, 1)),
    context_lost           INTEGER NOT NULL DEFAULT 0 CHECK (context_lost IN (0, 1)),
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL,
    closed_at              TEXT
);
-- Listing: all sessions, by task, by state; newest first with id as tie-breaker
-- (the keyset of ListSessions).
CREATE INDEX sessions_created_idx ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_task_created_idx ON sessions (task_id, created_at DESC, id DESC);
CREATE INDEX sessions_state_created_idx ON sessions (state, created_at DESC, id DESC);

CREATE TABLE executors_running (
    session_id              TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    runtime                 TEXT NOT NULL DEFAULT 'standalone'
                            CHECK (runtime IN ('standalone', 'detached', 'remote')),
    status                  TEXT NOT NULL DEFAULT 'stopped'
                            CHECK (status IN ('starting', 'ready', 'error', 'stopped')),
    agent_execution_id      TEXT NOT NULL DEFAULT '',
    pid                     INTEGER NOT NULL DEFAULT 0,
    host_url                TEXT NOT NULL DEFAULT '',
    -- The agent's ACP session id.
    resume_token            TEXT NOT NULL DEFAULT '',
    supports_session_resume INTEGER NOT NULL DEFAULT 0 CHECK (supports_session_resume IN (0, 1)),
    supports_load           INTEGER NOT NULL DEFAULT 0 CHECK (supports_load IN (0, 1)),
    supports_workspace_only INTEGER NOT NULL DEFAULT 0 CHECK (supports_workspace_only IN (0, 1)),
    worktree_path           TEXT NOT NULL DEFAULT '',
    worktree_branch         TEXT NOT NULL DEFAULT '',
    last_seen_at            TEXT,
    error_message           TEXT NOT NULL DEFAULT '',
    exit_code               INTEGER,
    exit_signal             TEXT NOT NULL DEFAULT '',
    updated_at              TEXT NOT NULL
);
CREATE INDEX executors_running_status_idx ON executors_running (status);

CREATE TABLE turns (
    session_id          TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    prompt_id           TEXT NOT NULL CHECK (prompt_id <> ''),
    seq                 INTEGER NOT NULL CHECK (seq > 0),
    kind                TEXT NOT NULL CHECK (kind IN ('initial', 'prompt', 'continue')),
    state               TEXT NOT NULL DEFAULT 'queued'
                        CHECK (state IN ('queued', 'running', 'completed', 'cancelled', 'failed', 'interrupted')),
    prompt              TEXT CHECK (prompt IS NULL OR json_valid(prompt)),
    stop_reason         TEXT NOT NULL DEFAULT '',
    error_code          TEXT NOT NULL DEFAULT '',
    error_message       TEXT NOT NULL DEFAULT '',
    interrupt_reason    TEXT NOT NULL DEFAULT '',
    exit_code           INTEGER,
    exit_signal         TEXT NOT NULL DEFAULT '',
    continues_prompt_id TEXT NOT NULL DEFAULT '',
    cancel_requested    INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    created_at          TEXT NOT NULL,
    started_at          TEXT,
    ended_at            TEXT,
    -- The prompt id is the client's idempotency key within a session.
    PRIMARY KEY (session_id, prompt_id),
    UNIQUE (session_id, seq)
);
CREATE INDEX turns_session_state_idx ON turns (session_id, state);

CREATE TABLE messages (
    -- AUTOINCREMENT: ids are never reused, so "highest id" is always the
    -- latest message (chunk aggregation relies on it).
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- Empty for messages outside any turn (e.g. system notices).
    prompt_id  TEXT NOT NULL DEFAULT '',
    role       TEXT NOT NULL CHECK (role IN ('user', 'agent', 'thought', 'system')),
    text       TEXT NOT NULL DEFAULT '',
    content    TEXT CHECK (content IS NULL OR json_valid(content)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX messages_session_idx ON messages (session_id, id);

CREATE TABLE tool_calls (
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
    PRIMARY KEY (session_id, tool_call_id)
);
CREATE INDEX tool_calls_session_created_idx ON tool_calls (session_id, created_at);

CREATE TABLE permission_requests (
    id                 TEXT NOT NULL,
    session_id         TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    prompt_id          TEXT NOT NULL DEFAULT '',
    tool_call_id       TEXT NOT NULL DEFAULT '',
    title              TEXT NOT NULL DEFAULT '',
    options            TEXT CHECK (options IS NULL OR json_valid(options)),
    state              TEXT NOT NULL DEFAULT 'pending'
                       CHECK (state IN ('pending', 'selected', 'cancelled', 'expired')),
    selected_option_id TEXT NOT NULL DEFAULT '',
    created_at         TEXT NOT NULL,
    resolved_at        TEXT,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX permission_requests_session_state_idx ON permission_requests (session_id, state, created_at);

CREATE TABLE agent_profiles (
    id                        TEXT NOT NULL PRIMARY KEY,
    display_name              TEXT NOT NULL DEFAULT '',
    command                   TEXT NOT NULL DEFAULT '',
    args                      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(args)),
    env                       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(env)),
    -- builtin | config | detected (records.go has no typed constants for it).
    source                    TEXT NOT NULL DEFAULT '',
    available                 INTEGER NOT NULL DEFAULT 0 CHECK (available IN (0, 1)),
    unavailable_reason        TEXT NOT NULL DEFAULT '',
    native_session_resume     INTEGER NOT NULL DEFAULT 0 CHECK (native_session_resume IN (0, 1)),
    history_context_injection INTEGER NOT NULL DEFAULT 0 CHECK (history_context_injection IN (0, 1)),
    resume_args               TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(resume_args)),
    capabilities              TEXT CHECK (capabilities IS NULL OR json_valid(capabilities)),
    probed_at                 TEXT,
    updated_at                TEXT NOT NULL
);

-- +goose Down
DROP TABLE agent_profiles;
DROP TABLE permission_requests;
DROP TABLE tool_calls;
DROP TABLE messages;
DROP TABLE turns;
DROP TABLE executors_running;
DROP TABLE sessions;
DROP TABLE tasks;
