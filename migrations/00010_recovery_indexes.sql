-- Recovery planning reads only what the planner needs (the last turns and
-- the output of the one turn that matters), not the whole transcript: these
-- indexes make each of those reads an index seek, so a plan costs the same
-- at the tenth and the ten-thousandth message.

-- +goose Up
-- The turn that started last (a continuation runs before the turns held
-- in the queue, so it is not always the one with the highest seq).
CREATE INDEX turns_session_started_idx ON turns (session_id, started_at);
-- One turn's messages and tool calls.
CREATE INDEX messages_session_prompt_idx ON messages (session_id, prompt_id, id);
CREATE INDEX tool_calls_session_prompt_idx ON tool_calls (session_id, prompt_id, created_at);

-- +goose Down
DROP INDEX tool_calls_session_prompt_idx;
DROP INDEX messages_session_prompt_idx;
DROP INDEX turns_session_started_idx;
