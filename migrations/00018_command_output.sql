-- How much of a command's output the event log holds, and what it left
-- out (sessions/commands.go, docs/terminal.md "Commands"): output_bytes
-- are recorded in command.output events (counted as the command wrote
-- them), dropped_bytes are not (those known so far; all of them once the
-- command has exited), and truncated names the limit that stopped the
-- recording ('' while none has): command_limit (tetherd serve
-- --command-output-limit) or session_limit (--session-command-output-limit).
-- A command recorded before this migration counts what its offset says.

-- +goose Up
ALTER TABLE commands ADD COLUMN output_bytes INTEGER NOT NULL DEFAULT 0 CHECK (output_bytes >= 0);
ALTER TABLE commands ADD COLUMN dropped_bytes INTEGER NOT NULL DEFAULT 0 CHECK (dropped_bytes >= 0);
ALTER TABLE commands ADD COLUMN truncated TEXT NOT NULL DEFAULT '' CHECK (truncated IN ('', 'command_limit', 'session_limit'));
UPDATE commands SET output_bytes = output_offset;

-- +goose Down
ALTER TABLE commands DROP COLUMN truncated;
ALTER TABLE commands DROP COLUMN dropped_bytes;
ALTER TABLE commands DROP COLUMN output_bytes;
