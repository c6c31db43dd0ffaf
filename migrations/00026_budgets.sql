-- Budgets and the stall watchdog (issue 33): a session's budget (JSON as
-- session.Budget; session.budget_changed), and when its running turn was
-- found stalled (turn.stalled; cleared by turn.stall_ended and the turn's
-- end). The inbox reads the stalled turns and the turns a budget stopped
-- by their own partial indexes.

-- +goose Up
ALTER TABLE sessions ADD COLUMN budget TEXT CHECK (budget IS NULL OR json_valid(budget));
ALTER TABLE turns ADD COLUMN stalled_at TEXT;
CREATE INDEX turns_stalled_idx ON turns (stalled_at) WHERE stalled_at IS NOT NULL;
CREATE INDEX turns_budget_idx ON turns (ended_at) WHERE state = 'cancelled' AND error_code = 'budget_exceeded' AND rewound = 0;

-- +goose Down
DROP INDEX turns_budget_idx;
DROP INDEX turns_stalled_idx;
ALTER TABLE turns DROP COLUMN stalled_at;
ALTER TABLE sessions DROP COLUMN budget;
