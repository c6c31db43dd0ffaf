-- A session's worktree (its git worktree on a branch of its own) is made
-- by its executor in a repository: worktree_repo is that repository's top
-- level, from which a missing worktree is made again; worktree_state is
-- active while the session may use it, kept or removed once the session
-- was closed ('' for a session without a worktree).

-- +goose Up
ALTER TABLE executors_running ADD COLUMN worktree_repo TEXT NOT NULL DEFAULT '';
ALTER TABLE executors_running ADD COLUMN worktree_state TEXT NOT NULL DEFAULT ''
    CHECK (worktree_state IN ('', 'active', 'kept', 'removed'));

-- +goose Down
ALTER TABLE executors_running DROP COLUMN worktree_state;
ALTER TABLE executors_running DROP COLUMN worktree_repo;
