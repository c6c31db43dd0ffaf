-- What an interrupted turn changed in its session's workspace, as its
-- executor found it when the turn was interrupted: the files changed since
-- the turn's checkpoint and whether HEAD moved (JSON, the recovery
-- report's workspace part). NULL until it was looked at.

-- +goose Up
ALTER TABLE turns ADD COLUMN workspace_changes TEXT;

-- +goose Down
ALTER TABLE turns DROP COLUMN workspace_changes;
