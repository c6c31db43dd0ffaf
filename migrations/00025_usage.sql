-- Usage (issue 33): what a session's agent says it used (tokens, its
-- context window, cost), as the session and each turn now stand
-- (usage.updated carries both; JSON as session.Usage).

-- +goose Up
ALTER TABLE sessions ADD COLUMN usage TEXT CHECK (usage IS NULL OR json_valid(usage));
ALTER TABLE turns ADD COLUMN usage TEXT CHECK (usage IS NULL OR json_valid(usage));

-- +goose Down
ALTER TABLE turns DROP COLUMN usage;
ALTER TABLE sessions DROP COLUMN usage;
