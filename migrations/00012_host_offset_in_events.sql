-- A hosted session's committed host offset travels in the event row the
-- record's change writes anyway, instead of an UPDATE of its executor row
-- in every transaction (measured: one statement and one more WAL page a
-- paced chunk, ~10 % of the daemon's CPU with four hosted sessions).
--
-- Offsets are absolute over the session's life: a new agent's outbox
-- starts again at 1 on its host, so the daemon stores base + offset, where
-- host_offset_base is where the current agent's numbering starts. Then the
-- committed offset is the larger of executors_running.host_offset and the
-- host_offset of the session's last event that carries one, and the host
-- resumes after it minus the base. host_offset_seq is the session's event
-- seq as of the executor row's own host_offset: no event up to it carries
-- a larger offset, so the read looks only at the events after it.

-- +goose Up
ALTER TABLE events ADD COLUMN host_offset INTEGER CHECK (host_offset IS NULL OR host_offset > 0);
ALTER TABLE executors_running ADD COLUMN host_offset_base INTEGER NOT NULL DEFAULT 0 CHECK (host_offset_base >= 0);
ALTER TABLE executors_running ADD COLUMN host_offset_seq INTEGER NOT NULL DEFAULT 0 CHECK (host_offset_seq >= 0);
-- Every offset so far is in the executor rows: the events before now
-- need not be read.
UPDATE executors_running SET host_offset_seq =
    COALESCE((SELECT MAX(seq) FROM events WHERE events.session_id = executors_running.session_id), 0);

-- +goose Down
ALTER TABLE executors_running DROP COLUMN host_offset_seq;
ALTER TABLE executors_running DROP COLUMN host_offset_base;
ALTER TABLE events DROP COLUMN host_offset;
