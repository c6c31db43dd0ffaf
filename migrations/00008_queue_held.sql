-- Prompts queued behind a turn that a restart interrupted stay queued, in
-- order, but wait for the user: queue_held marks a session whose queue must
-- not run by itself until it is continued (the continuation first, then the
-- queue) or prompted (the queue first, then the new prompt).

-- +goose Up
ALTER TABLE sessions ADD COLUMN queue_held INTEGER NOT NULL DEFAULT 0 CHECK (queue_held IN (0, 1));

-- +goose Down
ALTER TABLE sessions DROP COLUMN queue_held;
