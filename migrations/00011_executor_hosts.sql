-- Executor hosts (issue 13): a session's agent may run in a `tetherd host`
-- that outlives the daemon. Its executor row names the host (host: `local`
-- for the detached runtime, a configured name for a remote one; empty for
-- standalone; it replaces the never-used host_url), keeps host_offset, the
-- last record of the host's outbox for the session that the daemon has
-- committed (written in the same transaction as what the record caused,
-- so a replay after a restart resumes exactly after it), and may be
-- `reconnecting` while the daemon has lost its connection to the host.
-- SQLite cannot change a CHECK constraint in place: the table is rebuilt.

-- +goose Up
CREATE TABLE executors_running_new (
    session_id              TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    runtime                 TEXT NOT NULL DEFAULT 'standalone'
                            CHECK (runtime IN ('standalone', 'detached', 'remote')),
    status                  TEXT NOT NULL DEFAULT 'stopped'
                            CHECK (status IN ('starting', 'ready', 'reconnecting', 'error', 'stopped')),
    agent_execution_id      TEXT NOT NULL DEFAULT '',
    pid                     INTEGER NOT NULL DEFAULT 0,
    host                    TEXT NOT NULL DEFAULT '',
    host_offset             INTEGER NOT NULL DEFAULT 0 CHECK (host_offset >= 0),
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
    updated_at              TEXT NOT NULL,
    error_code              TEXT NOT NULL DEFAULT '',
    error_profile           TEXT NOT NULL DEFAULT ''
);
INSERT INTO executors_running_new (session_id, runtime, status, agent_execution_id, pid, resume_token,
    supports_session_resume, supports_load, supports_workspace_only, worktree_path, worktree_branch,
    last_seen_at, error_message, exit_code, exit_signal, updated_at, error_code, error_profile)
SELECT session_id, runtime, status, agent_execution_id, pid, resume_token,
    supports_session_resume, supports_load, supports_workspace_only, worktree_path, worktree_branch,
    last_seen_at, error_message, exit_code, exit_signal, updated_at, error_code, error_profile
FROM executors_running;
DROP TABLE executors_running;
ALTER TABLE executors_running_new RENAME TO executors_running;
CREATE INDEX executors_running_status_idx ON executors_running (status);

-- +goose Down
CREATE TABLE executors_running_old (
    session_id              TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    runtime                 TEXT NOT NULL DEFAULT 'standalone'
                            CHECK (runtime IN ('standalone', 'detached', 'remote')),
    status                  TEXT NOT NULL DEFAULT 'stopped'
                            CHECK (status IN ('starting', 'ready', 'error', 'stopped')),
    agent_execution_id      TEXT NOT NULL DEFAULT '',
    pid                     INTEGER NOT NULL DEFAULT 0,
    host_url                TEXT NOT NULL DEFAULT '',
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
    updated_at              TEXT NOT NULL,
    error_code              TEXT NOT NULL DEFAULT '',
    error_profile           TEXT NOT NULL DEFAULT ''
);
INSERT INTO executors_running_old (session_id, runtime, status, agent_execution_id, pid, resume_token,
    supports_session_resume, supports_load, supports_workspace_only, worktree_path, worktree_branch,
    last_seen_at, error_message, exit_code, exit_signal, updated_at, error_code, error_profile)
SELECT session_id, runtime, CASE status WHEN 'reconnecting' THEN 'stopped' ELSE status END, agent_execution_id, pid,
    resume_token, supports_session_resume, supports_load, supports_workspace_only, worktree_path, worktree_branch,
    last_seen_at, error_message, exit_code, exit_signal, updated_at, error_code, error_profile
FROM executors_running;
DROP TABLE executors_running;
ALTER TABLE executors_running_old RENAME TO executors_running;
CREATE INDEX executors_running_status_idx ON executors_running (status);
