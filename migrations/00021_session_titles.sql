-- Sessions you can find (issue 34): where a session's title comes from
-- ('' none, 'prompt' its first prompt, 'agent' the agent's
-- session_info_update, 'user' the user's, at creation or by PATCH), whether
-- it is archived (left out of the list unless asked for), and a search
-- index of what its ended turns said: one FTS4 document per session (its
-- docid the session's rowid), appended to at each turn's end. FTS4, not
-- FTS5: mattn/go-sqlite3 compiles FTS5 only under a build tag, which a
-- plain `go build` or `go install` of tetherd would lack; FTS4 is in every
-- build.

-- +goose Up
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT ''
    CHECK (title_source IN ('', 'prompt', 'agent', 'user'));
ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1));
-- Titles given before sources were recorded were given at creation.
UPDATE sessions SET title_source = 'user' WHERE title <> '';
CREATE VIRTUAL TABLE session_search USING fts4(session_id, body, notindexed=session_id, tokenize=unicode61);
INSERT INTO session_search (docid, session_id, body)
    SELECT s.rowid, s.id, group_concat(m.text, ' ')
    FROM sessions s JOIN messages m ON m.session_id = s.id
    JOIN turns t ON t.session_id = m.session_id AND t.prompt_id = m.prompt_id
    WHERE t.state IN ('completed', 'failed', 'cancelled', 'interrupted')
    GROUP BY s.rowid, s.id;

-- +goose Down
DROP TABLE session_search;
ALTER TABLE sessions DROP COLUMN archived;
ALTER TABLE sessions DROP COLUMN title_source;
