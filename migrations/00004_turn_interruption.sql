-- A continue turn keeps the recovery summary it was admitted on (which turn
-- it continues, why that turn was interrupted, which tool calls were cut
-- off), so a retried continuation with the same promptId gets the same answer.

-- +goose Up
ALTER TABLE turns ADD COLUMN interruption TEXT CHECK (interruption IS NULL OR json_valid(interruption));

-- +goose Down
ALTER TABLE turns DROP COLUMN interruption;
