-- Several nodes on one database (internal/cluster, docs/scale-out.md):
-- the nodes and where they are reached, each live session's lease (its
-- owner, the generation that fences the owner's writes, the expiry), and
-- the one counter row global event ids are taken from, in commit order.
-- Times here are the database's own clock (timestamptz): every node
-- compares leases against now() in the same place.

-- +goose Up
CREATE TABLE cluster_nodes (
    id           TEXT NOT NULL PRIMARY KEY,
    url          TEXT NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE session_leases (
    session_id TEXT NOT NULL PRIMARY KEY,
    node_id    TEXT NOT NULL,
    generation BIGINT NOT NULL CHECK (generation > 0),
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX session_leases_node_idx ON session_leases (node_id);
CREATE INDEX session_leases_expires_idx ON session_leases (expires_at);

CREATE TABLE event_ids (
    id      BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
    last_id BIGINT NOT NULL
);
INSERT INTO event_ids (id, last_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;

-- +goose Down
DROP TABLE event_ids;
DROP TABLE session_leases;
DROP TABLE cluster_nodes;
