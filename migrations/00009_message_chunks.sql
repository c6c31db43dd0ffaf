-- Streamed text chunks are appended as rows of their own instead of being
-- concatenated onto the message row: SQLite rewrites a whole row on UPDATE,
-- so appending to the row made every chunk cost the length of its message
-- (a long reply was quadratic). A message's text is its row's text followed
-- by its chunk rows in id order; the chunks are folded into the row once,
-- when the session's next message starts (or at start-up), so a chunk
-- costs the same at the first and the millionth byte of a message.

-- +goose Up
CREATE TABLE message_chunks (
    -- Append order within a message.
    id         INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX message_chunks_message_idx ON message_chunks (message_id, id);

-- +goose Down
-- Fold what is still open back into the message rows before dropping.
UPDATE messages SET text = text || (
    SELECT group_concat(text, '') FROM (SELECT text FROM message_chunks c
        WHERE c.message_id = messages.id ORDER BY c.id)
) WHERE id IN (SELECT message_id FROM message_chunks);
DROP TABLE message_chunks;
