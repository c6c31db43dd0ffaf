-- PostgreSQL twin of migrations/00021_session_titles.sql. Sessions you can
-- find (issue 34): where a session's title comes from, whether it is
-- archived, and a search index of what its ended turns said: one document
-- per session, appended to at each turn's end, searched by its tsvector
-- ('simple': no stemming, no stop words, as the SQLite tokenizer).

-- +goose Up
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT ''
    CHECK (title_source IN ('', 'prompt', 'agent', 'user'));
ALTER TABLE sessions ADD COLUMN archived BIGINT NOT NULL DEFAULT 0 CHECK (archived IN (0, 1));
UPDATE sessions SET title_source = 'user' WHERE title <> '';
CREATE TABLE session_search (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    tsv        tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED
);
CREATE INDEX session_search_tsv_idx ON session_search USING GIN (tsv);
INSERT INTO session_search (session_id, body)
    SELECT m.session_id, string_agg(m.text, ' ' ORDER BY m.id)
    FROM messages m
    JOIN turns t ON t.session_id = m.session_id AND t.prompt_id = m.prompt_id
    WHERE t.state IN ('completed', 'failed', 'cancelled', 'interrupted')
    GROUP BY m.session_id;

-- +goose Down
DROP TABLE session_search;
ALTER TABLE sessions DROP COLUMN archived;
ALTER TABLE sessions DROP COLUMN title_source;
