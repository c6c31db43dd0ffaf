-- Rewind, fork and hand-off (issue 32): a turn a rewind took the
-- workspace back past stays in the transcript, marked rewound; a session
-- records its latest rewind (what an undo undoes, JSON as
-- session.Rewind) and, for a fork, the session and turn it came from.

-- +goose Up
ALTER TABLE turns ADD COLUMN rewound INTEGER NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1));
ALTER TABLE sessions ADD COLUMN last_rewind TEXT CHECK (last_rewind IS NULL OR json_valid(last_rewind));
ALTER TABLE sessions ADD COLUMN forked_from_session TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN forked_from_prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN fork_handoff INTEGER NOT NULL DEFAULT 0 CHECK (fork_handoff IN (0, 1));

-- +goose Down
ALTER TABLE sessions DROP COLUMN fork_handoff;
ALTER TABLE sessions DROP COLUMN forked_from_prompt;
ALTER TABLE sessions DROP COLUMN forked_from_session;
ALTER TABLE sessions DROP COLUMN last_rewind;
ALTER TABLE turns DROP COLUMN rewound;
