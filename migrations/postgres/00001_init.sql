-- tetherd's schema on PostgreSQL, as the SQLite migrations 00001..00016
-- leave it (migrations/*.sql), for several nodes sharing one database
-- (docs/scale-out.md). Column types and values are SQLite's: times are
-- RFC 3339 text (UTC, so they sort), flags are 0/1 integers, JSON is text
-- checked by json_valid: the store runs the same statements on both.
-- Integers are BIGINT (SQLite's are 64-bit). tool_calls and
-- permission_requests keep a rowid, which breaks ties in their order as
-- SQLite's implicit one does.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION json_valid(t text) RETURNS boolean AS $$
BEGIN
    PERFORM t::json;
    RETURN true;
EXCEPTION WHEN others THEN
    RETURN false;
END
$$ LANGUAGE plpgsql IMMUTABLE;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION json_type(t text) RETURNS text AS $$
    SELECT json_typeof(t::json)
$$ LANGUAGE sql IMMUTABLE;
-- +goose StatementEnd

-- SQLite's scalar max(a, b, ...): the largest of its arguments.
CREATE FUNCTION max(a bigint, b bigint) RETURNS bigint AS 'SELECT GREATEST(a, b)' LANGUAGE sql IMMUTABLE;
CREATE FUNCTION max(a bigint, b bigint, c bigint) RETURNS bigint AS 'SELECT GREATEST(a, b, c)' LANGUAGE sql IMMUTABLE;

-- SQLite's group_concat(value, separator), ORDER BY inside the call.
-- +goose StatementBegin
CREATE FUNCTION group_concat_step(acc text, v text, sep text) RETURNS text AS $$
    SELECT CASE WHEN v IS NULL THEN acc WHEN acc IS NULL THEN v ELSE acc || sep || v END
$$ LANGUAGE sql IMMUTABLE;
-- +goose StatementEnd
CREATE AGGREGATE group_concat(text, text) (SFUNC = group_concat_step, STYPE = text);

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
    agent_profile_id       TEXT NOT NULL,
    cwd                    TEXT NOT NULL,
    title                  TEXT NOT NULL DEFAULT '',
    state                  TEXT NOT NULL DEFAULT 'CREATED'
                           CHECK (state IN ('CREATED', 'STARTING', 'RUNNING', 'WAITING_FOR_INPUT',
                                            'COMPLETED', 'FAILED', 'CANCELLED')),
    event_epoch            TEXT NOT NULL CHECK (event_epoch <> ''),
    mcp_servers            TEXT NOT NULL DEFAULT '[]'
                           CHECK (json_valid(mcp_servers) AND json_type(mcp_servers) = 'array'),
    additional_directories TEXT NOT NULL DEFAULT '[]'
                           CHECK (json_valid(additional_directories)),
    plan                   TEXT CHECK (plan IS NULL OR json_valid(plan)),
    prompted               BIGINT NOT NULL DEFAULT 0 CHECK (prompted IN (0, 1)),
    context_lost           BIGINT NOT NULL DEFAULT 0 CHECK (context_lost IN (0, 1)),
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL,
    closed_at              TEXT,
    inject_context         BIGINT NOT NULL DEFAULT 0 CHECK (inject_context IN (0, 1)),
    mode_choice            TEXT NOT NULL DEFAULT '',
    config_choices         TEXT NOT NULL DEFAULT '{}'
                           CHECK (json_valid(config_choices) AND json_type(config_choices) = 'object'),
    queue_held             BIGINT NOT NULL DEFAULT 0 CHECK (queue_held IN (0, 1)),
    auto_continue          BIGINT NOT NULL DEFAULT 0 CHECK (auto_continue IN (0, 1))
);
CREATE INDEX sessions_created_idx ON sessions (created_at DESC, id DESC);
CREATE INDEX sessions_task_created_idx ON sessions (task_id, created_at DESC, id DESC);
CREATE INDEX sessions_state_created_idx ON sessions (state, created_at DESC, id DESC);

CREATE TABLE turns (
    session_id          TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    prompt_id           TEXT NOT NULL CHECK (prompt_id <> ''),
    seq                 BIGINT NOT NULL CHECK (seq > 0),
    kind                TEXT NOT NULL CHECK (kind IN ('initial', 'prompt', 'continue')),
    state               TEXT NOT NULL DEFAULT 'queued'
                        CHECK (state IN ('queued', 'running', 'completed', 'cancelled', 'failed', 'interrupted')),
    prompt              TEXT CHECK (prompt IS NULL OR json_valid(prompt)),
    stop_reason         TEXT NOT NULL DEFAULT '',
    error_code          TEXT NOT NULL DEFAULT '',
    error_message       TEXT NOT NULL DEFAULT '',
    interrupt_reason    TEXT NOT NULL DEFAULT '',
    exit_code           BIGINT,
    exit_signal         TEXT NOT NULL DEFAULT '',
    continues_prompt_id TEXT NOT NULL DEFAULT '',
    cancel_requested    BIGINT NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    created_at          TEXT NOT NULL,
    started_at          TEXT,
    ended_at            TEXT,
    context_injected    BIGINT NOT NULL DEFAULT 0 CHECK (context_injected IN (0, 1)),
    interruption        TEXT CHECK (interruption IS NULL OR json_valid(interruption)),
    delivered_at        TEXT,
    workspace_changes   TEXT,
    PRIMARY KEY (session_id, prompt_id),
    UNIQUE (session_id, seq)
);
CREATE INDEX turns_session_state_idx ON turns (session_id, state);
CREATE INDEX turns_session_started_idx ON turns (session_id, started_at);

-- Message ids come from this sequence (one nextval a message), so ids of
-- every node grow together: a session's highest id is its latest message
-- whichever node wrote it.
CREATE TABLE messages (
    id         BIGINT NOT NULL PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    prompt_id  TEXT NOT NULL DEFAULT '',
    role       TEXT NOT NULL CHECK (role IN ('user', 'agent', 'thought', 'system')),
    text       TEXT NOT NULL DEFAULT '',
    content    TEXT CHECK (content IS NULL OR json_valid(content)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE SEQUENCE message_ids;
CREATE INDEX messages_session_idx ON messages (session_id, id);
CREATE INDEX messages_session_prompt_idx ON messages (session_id, prompt_id, id);

CREATE TABLE message_chunks (
    id         BIGSERIAL PRIMARY KEY,
    message_id BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX message_chunks_message_idx ON message_chunks (message_id, id);

CREATE TABLE tool_calls (
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_call_id TEXT NOT NULL,
    prompt_id    TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    kind         TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
    interrupted  BIGINT NOT NULL DEFAULT 0 CHECK (interrupted IN (0, 1)),
    content      TEXT CHECK (content IS NULL OR json_valid(content)),
    locations    TEXT CHECK (locations IS NULL OR json_valid(locations)),
    raw_input    TEXT CHECK (raw_input IS NULL OR json_valid(raw_input)),
    raw_output   TEXT CHECK (raw_output IS NULL OR json_valid(raw_output)),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    rowid        BIGSERIAL NOT NULL,
    PRIMARY KEY (session_id, tool_call_id)
);
CREATE INDEX tool_calls_session_created_idx ON tool_calls (session_id, created_at);
CREATE INDEX tool_calls_session_prompt_idx ON tool_calls (session_id, prompt_id, created_at);

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
    rowid              BIGSERIAL NOT NULL,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX permission_requests_session_state_idx ON permission_requests (session_id, state, created_at);

CREATE TABLE agent_profiles (
    id                        TEXT NOT NULL PRIMARY KEY,
    display_name              TEXT NOT NULL DEFAULT '',
    command                   TEXT NOT NULL DEFAULT '',
    args                      TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(args)),
    env                       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(env)),
    source                    TEXT NOT NULL DEFAULT '',
    available                 BIGINT NOT NULL DEFAULT 0 CHECK (available IN (0, 1)),
    unavailable_reason        TEXT NOT NULL DEFAULT '',
    native_session_resume     BIGINT NOT NULL DEFAULT 0 CHECK (native_session_resume IN (0, 1)),
    history_context_injection BIGINT NOT NULL DEFAULT 0 CHECK (history_context_injection IN (0, 1)),
    resume_args               TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(resume_args)),
    capabilities              TEXT CHECK (capabilities IS NULL OR json_valid(capabilities)),
    probed_at                 TEXT,
    updated_at                TEXT NOT NULL
);

CREATE TABLE events (
    id          BIGINT NOT NULL PRIMARY KEY,
    session_id  TEXT,
    seq         BIGINT CHECK (seq IS NULL OR seq > 0),
    type        TEXT NOT NULL CHECK (type <> ''),
    prompt_id   TEXT,
    is_global   BIGINT NOT NULL DEFAULT 0 CHECK (is_global IN (0, 1)),
    -- Not checked as JSON: the writer encodes every payload, and a check
    -- per row would cost the log's ingest (json_valid traps errors).
    payload     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    host_offset BIGINT CHECK (host_offset IS NULL OR host_offset > 0),
    CHECK ((session_id IS NULL) = (seq IS NULL))
);
CREATE UNIQUE INDEX events_session_seq_idx ON events (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX events_global_idx ON events (id) WHERE is_global = 1;

CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE executors_running (
    session_id              TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    runtime                 TEXT NOT NULL DEFAULT 'standalone'
                            CHECK (runtime IN ('standalone', 'detached', 'remote')),
    status                  TEXT NOT NULL DEFAULT 'stopped'
                            CHECK (status IN ('starting', 'ready', 'reconnecting', 'error', 'stopped')),
    agent_execution_id      TEXT NOT NULL DEFAULT '',
    pid                     BIGINT NOT NULL DEFAULT 0,
    host                    TEXT NOT NULL DEFAULT '',
    host_offset             BIGINT NOT NULL DEFAULT 0 CHECK (host_offset >= 0),
    resume_token            TEXT NOT NULL DEFAULT '',
    supports_session_resume BIGINT NOT NULL DEFAULT 0 CHECK (supports_session_resume IN (0, 1)),
    supports_load           BIGINT NOT NULL DEFAULT 0 CHECK (supports_load IN (0, 1)),
    supports_workspace_only BIGINT NOT NULL DEFAULT 0 CHECK (supports_workspace_only IN (0, 1)),
    worktree_path           TEXT NOT NULL DEFAULT '',
    worktree_branch         TEXT NOT NULL DEFAULT '',
    last_seen_at            TEXT,
    error_message           TEXT NOT NULL DEFAULT '',
    exit_code               BIGINT,
    exit_signal             TEXT NOT NULL DEFAULT '',
    updated_at              TEXT NOT NULL,
    error_code              TEXT NOT NULL DEFAULT '',
    error_profile           TEXT NOT NULL DEFAULT '',
    host_offset_base        BIGINT NOT NULL DEFAULT 0 CHECK (host_offset_base >= 0),
    host_offset_seq         BIGINT NOT NULL DEFAULT 0 CHECK (host_offset_seq >= 0),
    worktree_repo           TEXT NOT NULL DEFAULT '',
    worktree_state          TEXT NOT NULL DEFAULT ''
                            CHECK (worktree_state IN ('', 'active', 'kept', 'removed'))
);
CREATE INDEX executors_running_status_idx ON executors_running (status);

CREATE TABLE commands (
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    command       TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('running', 'exited', 'lost')),
    output_offset BIGINT NOT NULL DEFAULT 0 CHECK (output_offset >= 0),
    exit_code     BIGINT,
    created_at    TEXT NOT NULL,
    ended_at      TEXT,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX commands_running ON commands (state) WHERE state = 'running';

-- +goose Down
DROP TABLE commands;
DROP TABLE executors_running;
DROP TABLE meta;
DROP TABLE events;
DROP TABLE agent_profiles;
DROP TABLE permission_requests;
DROP TABLE tool_calls;
DROP TABLE message_chunks;
DROP SEQUENCE message_ids;
DROP TABLE messages;
DROP TABLE turns;
DROP TABLE sessions;
DROP TABLE tasks;
DROP FUNCTION max(bigint, bigint, bigint);
DROP FUNCTION max(bigint, bigint);
DROP AGGREGATE group_concat(text, text);
DROP FUNCTION group_concat_step(text, text, text);
DROP FUNCTION json_type(text);
DROP FUNCTION json_valid(text);
