-- A session that opted in to safe automatic continuation (at its creation,
-- or through its agent profile's autoContinue): after an interruption that
-- was not the user's doing, tetherd continues the turn once by itself.

-- +goose Up
ALTER TABLE sessions ADD COLUMN auto_continue INTEGER NOT NULL DEFAULT 0 CHECK (auto_continue IN (0, 1));

-- +goose Down
ALTER TABLE sessions DROP COLUMN auto_continue;
