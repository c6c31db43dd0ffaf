-- PostgreSQL twin of migrations/00026_budgets.sql: a session's budget and
-- a turn's stall (issue 33).

-- +goose Up
ALTER TABLE sessions ADD COLUMN budget TEXT;
ALTER TABLE turns ADD COLUMN stalled_at TEXT;
CREATE INDEX turns_stalled_idx ON turns (stalled_at) WHERE stalled_at IS NOT NULL;
CREATE INDEX turns_budget_idx ON turns (ended_at) WHERE state = 'cancelled' AND error_code = 'budget_exceeded' AND rewound = 0;

-- +goose Down
DROP INDEX turns_budget_idx;
DROP INDEX turns_stalled_idx;
ALTER TABLE turns DROP COLUMN stalled_at;
ALTER TABLE sessions DROP COLUMN budget;
