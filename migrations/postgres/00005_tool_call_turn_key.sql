-- A tool call is its turn's: its key is (session_id, prompt_id,
-- tool_call_id), as in the SQLite migration 00019_tool_call_turn_key.sql
-- (which says why).

-- +goose Up
ALTER TABLE tool_calls DROP CONSTRAINT tool_calls_pkey;
ALTER TABLE tool_calls ADD PRIMARY KEY (session_id, prompt_id, tool_call_id);

-- +goose Down
-- Keyed by session again, a session keeps one call of each id: the one
-- that started last (as the old key's merge let a later call overwrite).
DELETE FROM tool_calls t USING tool_calls later
WHERE later.session_id = t.session_id AND later.tool_call_id = t.tool_call_id AND later.rowid > t.rowid;
ALTER TABLE tool_calls DROP CONSTRAINT tool_calls_pkey;
ALTER TABLE tool_calls ADD PRIMARY KEY (session_id, tool_call_id);
