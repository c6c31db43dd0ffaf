-- Agents run in a sandbox (issue 31). A session may carry its own policy
-- (POST /session `sandbox`, JSON as sandbox.Policy; NULL: the profile's),
-- and its executor row says whether the agent of its last start runs in
-- one ('on', 'off'; '' before any start) and why not.

-- +goose Up
ALTER TABLE sessions ADD COLUMN sandbox TEXT;
ALTER TABLE executors_running ADD COLUMN sandbox TEXT NOT NULL DEFAULT '';
ALTER TABLE executors_running ADD COLUMN sandbox_reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE executors_running DROP COLUMN sandbox_reason;
ALTER TABLE executors_running DROP COLUMN sandbox;
ALTER TABLE sessions DROP COLUMN sandbox;
