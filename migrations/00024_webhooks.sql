-- Webhooks (issue 33): each delivers the global log's events it is
-- subscribed to, in order, from the last global event id it
-- handled (of the global epoch named beside it), kept here so a restart
-- or kill -9 of tetherd loses and reorders nothing. A delivery's
-- attempts are logged, the last 200 of each webhook kept.

-- +goose Up
CREATE TABLE webhooks (
    id                TEXT NOT NULL PRIMARY KEY,
    url               TEXT NOT NULL,
    events            TEXT NOT NULL CHECK (json_valid(events)),
    secret            TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
    disabled_reason   TEXT NOT NULL DEFAULT '',
    last_event_id     INTEGER NOT NULL DEFAULT 0 CHECK (last_event_id >= 0),
    epoch             TEXT NOT NULL DEFAULT '',
    failures          INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    last_error        TEXT NOT NULL DEFAULT '',
    next_attempt_at   TEXT,
    last_delivered_at TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE TABLE webhook_deliveries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    event_id    INTEGER NOT NULL DEFAULT 0,
    attempt     INTEGER NOT NULL CHECK (attempt > 0),
    ok          INTEGER NOT NULL CHECK (ok IN (0, 1)),
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    duration_ms INTEGER NOT NULL DEFAULT 0,
    at          TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
