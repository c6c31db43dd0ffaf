-- Global event ids from a sequence (issue 30): the counter row every
-- node's commit locked from its reservation to its commit made the nodes'
-- writers take turns. A sequence gives ids out without a lock, so they
-- are no longer in commit order: a reader holds back behind the writers
-- still running (tether_event_horizon) instead.
--
-- tether_reserve_event_ids gives a writer transaction n ids, ascending.
-- First it takes its transaction id, marks its backend as holding event
-- ids (its application_name, with " (event ids)": the setting is local
-- to the transaction) and takes the advisory lock (0x7e7e0002, its
-- backend pid) until the transaction ends; both are let go only after
-- the commit is visible. It NOTIFYs the other nodes (delivered at the
-- commit).
--
-- tether_event_horizon reads the last id given out, then lists the
-- writers holding ids (backends of this database and of the caller's
-- application_name so marked, with a transaction id). Once each has
-- ended (a shared take of its advisory lock waits for that, see
-- store.EventHorizon), every id up to that last one is committed or
-- never will be. A writer that has not taken its ids yet is not waited
-- for: its ids will be above.

-- +goose Up
CREATE SEQUENCE event_id_seq AS BIGINT MINVALUE 1;
SELECT setval('event_id_seq', GREATEST((SELECT last_id FROM event_ids), (SELECT COALESCE(MAX(id), 0) FROM events), 1),
    GREATEST((SELECT last_id FROM event_ids), (SELECT COALESCE(MAX(id), 0) FROM events)) > 0);
DROP TABLE event_ids;

-- +goose StatementBegin
CREATE FUNCTION tether_reserve_event_ids(n INTEGER) RETURNS SETOF BIGINT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    last BIGINT;
    app TEXT := current_setting('application_name');
BEGIN
    PERFORM pg_current_xact_id();
    IF right(app, 12) <> ' (event ids)' THEN
        PERFORM set_config('application_name', app || ' (event ids)', true);
    END IF;
    PERFORM pg_advisory_xact_lock(x'7e7e0002'::integer, pg_backend_pid());
    FOR i IN 1..n LOOP
        last := nextval('event_id_seq');
        RETURN NEXT last;
    END LOOP;
    PERFORM pg_notify('tether_events', last::text);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION tether_event_horizon(OUT last_id BIGINT, OUT writers INTEGER[])
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO last_id FROM event_id_seq;
    SELECT COALESCE(array_agg(a.pid), '{}') INTO writers
    FROM pg_stat_get_activity(NULL) a
    WHERE a.backend_xid IS NOT NULL AND a.pid <> pg_backend_pid()
      AND a.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND a.application_name = current_setting('application_name') || ' (event ids)';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION tether_event_horizon();
DROP FUNCTION tether_reserve_event_ids(INTEGER);
CREATE TABLE event_ids (
    id      BIGINT NOT NULL PRIMARY KEY CHECK (id = 1),
    last_id BIGINT NOT NULL
);
INSERT INTO event_ids (id, last_id) SELECT 1, COALESCE(MAX(id), 0) FROM events;
DROP SEQUENCE event_id_seq;
