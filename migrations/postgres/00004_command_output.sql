-- How much of a command's output the event log holds, and what it left
-- out: the same as the SQLite migration 00017_command_output.sql.

-- +goose Up
ALTER TABLE commands ADD COLUMN output_bytes BIGINT NOT NULL DEFAULT 0 CHECK (output_bytes >= 0);
ALTER TABLE commands ADD COLUMN dropped_bytes BIGINT NOT NULL DEFAULT 0 CHECK (dropped_bytes >= 0);
ALTER TABLE commands ADD COLUMN truncated TEXT NOT NULL DEFAULT '' CHECK (truncated IN ('', 'command_limit', 'session_limit'));
UPDATE commands SET output_bytes = output_offset;

-- +goose Down
ALTER TABLE commands DROP COLUMN truncated;
ALTER TABLE commands DROP COLUMN dropped_bytes;
ALTER TABLE commands DROP COLUMN output_bytes;
