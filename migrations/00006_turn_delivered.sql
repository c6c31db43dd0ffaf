-- A turn records when its prompt was written to the agent (session/prompt),
-- so that continuing an interrupted turn never sends the agent a request it
-- already holds (it would see it as two user turns) and still sends one it
-- never received. NULL: not delivered (or not known to be).

-- +goose Up
ALTER TABLE turns ADD COLUMN delivered_at TEXT;

-- +goose Down
ALTER TABLE turns DROP COLUMN delivered_at;
