-- An executor in error keeps the stable code of its failure (e.g.
-- agent_auth_required) and a fingerprint of the agent profile it failed
-- with, so that status reports the code after a restart and eager resume
-- does not start an agent that is known to want credentials until its
-- profile changes.

-- +goose Up
ALTER TABLE executors_running ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
ALTER TABLE executors_running ADD COLUMN error_profile TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executors_running DROP COLUMN error_profile;
ALTER TABLE executors_running DROP COLUMN error_code;
