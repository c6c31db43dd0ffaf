-- PostgreSQL twin of migrations/00025_usage.sql: a session's and a
-- turn's usage (issue 33).

-- +goose Up
ALTER TABLE sessions ADD COLUMN usage TEXT;
ALTER TABLE turns ADD COLUMN usage TEXT;

-- +goose Down
ALTER TABLE turns DROP COLUMN usage;
ALTER TABLE sessions DROP COLUMN usage;
