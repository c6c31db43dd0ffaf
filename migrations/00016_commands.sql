-- Commands run in a session's directory on its executor (POST
-- /session/{id}/commands): what ran, how much of its output the event log
-- holds (output_offset, the byte offset the next command.output starts
-- at), and how it ended. state: running, exited (exit_code set) or lost
-- (the daemon lost track of it: a standalone command when tetherd
-- restarted, or one whose host lost it).

-- +goose Up
CREATE TABLE commands (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    command TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('running', 'exited', 'lost')),
    output_offset INTEGER NOT NULL DEFAULT 0 CHECK (output_offset >= 0),
    exit_code INTEGER,
    created_at TEXT NOT NULL,
    ended_at TEXT,
    PRIMARY KEY (session_id, id)
);
CREATE INDEX commands_running ON commands (state) WHERE state = 'running';

-- +goose Down
DROP TABLE commands;
