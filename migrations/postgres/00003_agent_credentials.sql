-- What tetherd last saw of each agent profile's credentials
-- (internal/agents Credentials, as JSON): whether its agent asked for them
-- (ACP -32000) or worked, at its start or at a prompt, and under which
-- configuration (a fingerprint; values are never stored). GET /agents
-- shows it and POST /session checks it again before refusing.

-- +goose Up
ALTER TABLE agent_profiles ADD COLUMN credentials TEXT CHECK (credentials IS NULL OR json_valid(credentials));

-- +goose Down
ALTER TABLE agent_profiles DROP COLUMN credentials;
