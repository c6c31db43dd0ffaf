-- PostgreSQL twin of migrations/00022_rewind.sql: rewound turns, a
-- session's latest rewind, and a fork's origin.

-- +goose Up
ALTER TABLE turns ADD COLUMN rewound BIGINT NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1));
ALTER TABLE sessions ADD COLUMN last_rewind TEXT;
ALTER TABLE sessions ADD COLUMN forked_from_session TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN forked_from_prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN fork_handoff BIGINT NOT NULL DEFAULT 0 CHECK (fork_handoff IN (0, 1));

-- +goose Down
ALTER TABLE sessions DROP COLUMN fork_handoff;
ALTER TABLE sessions DROP COLUMN forked_from_prompt;
ALTER TABLE sessions DROP COLUMN forked_from_session;
ALTER TABLE sessions DROP COLUMN last_rewind;
ALTER TABLE turns DROP COLUMN rewound;
