-- PostgreSQL twin of migrations/00024_webhooks.sql: webhooks and their
-- delivery log (issue 33).

-- +goose Up
CREATE TABLE webhooks (
    id                TEXT NOT NULL PRIMARY KEY,
    url               TEXT NOT NULL,
    events            TEXT NOT NULL,
    secret            TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    state             TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
    disabled_reason   TEXT NOT NULL DEFAULT '',
    last_event_id     BIGINT NOT NULL DEFAULT 0 CHECK (last_event_id >= 0),
    epoch             TEXT NOT NULL DEFAULT '',
    failures          BIGINT NOT NULL DEFAULT 0 CHECK (failures >= 0),
    last_error        TEXT NOT NULL DEFAULT '',
    next_attempt_at   TEXT,
    last_delivered_at TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE TABLE webhook_deliveries (
    id          BIGSERIAL PRIMARY KEY,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    event_id    BIGINT NOT NULL DEFAULT 0,
    attempt     BIGINT NOT NULL CHECK (attempt > 0),
    ok          BIGINT NOT NULL CHECK (ok IN (0, 1)),
    status_code BIGINT NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    duration_ms BIGINT NOT NULL DEFAULT 0,
    at          TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
