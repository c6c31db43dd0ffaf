-- PostgreSQL twin of migrations/00023_inbox.sql: the inbox's indexes (issue 33).

-- +goose Up
CREATE INDEX permission_requests_pending_idx ON permission_requests (created_at) WHERE state = 'pending';
CREATE INDEX turns_waiting_idx ON turns (ended_at) WHERE state IN ('failed', 'interrupted') AND rewound = 0;
CREATE INDEX turns_session_seq_ended_idx ON turns (session_id, seq) WHERE state <> 'queued';
CREATE INDEX executors_running_auth_idx ON executors_running (updated_at) WHERE error_code = 'agent_auth_required';

-- +goose Down
DROP INDEX executors_running_auth_idx;
DROP INDEX turns_session_seq_ended_idx;
DROP INDEX turns_waiting_idx;
DROP INDEX permission_requests_pending_idx;
