-- History injection bookkeeping (DESIGN.md section 4): after a restore that
-- had to fall back to session/new, the next prompt is prefixed once with the
-- resume context. inject_context marks the session as owing that prefix;
-- context_injected marks the turn that carried it, so it is never sent twice,
-- not even across another restart.

-- +goose Up
ALTER TABLE sessions ADD COLUMN inject_context INTEGER NOT NULL DEFAULT 0 CHECK (inject_context IN (0, 1));
ALTER TABLE turns ADD COLUMN context_injected INTEGER NOT NULL DEFAULT 0 CHECK (context_injected IN (0, 1));

-- +goose Down
ALTER TABLE turns DROP COLUMN context_injected;
ALTER TABLE sessions DROP COLUMN inject_context;
