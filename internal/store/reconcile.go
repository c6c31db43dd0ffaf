package store

import (
	"context"
)

// Reads for start-up reconciliation. Before the API listens, tetherd looks
// at every active session's executor row, open turns and pending
// permissions. Read one session at a time that is three queries per
// session (3,000 for 1,000 sessions, most of them with nothing to repair);
// these read each of the three for all active sessions at once, from one
// snapshot, so start-up costs four queries whatever the number of sessions.

// activeStates are the session states start-up reconciliation looks at.
const activeStates = `('` + string(SessionStarting) + `', '` + string(SessionRunning) + `', '` + string(SessionWaitingForInput) + `')`

const (
	activeExecutorsSQL = `SELECT ` + executorColumns + ` FROM executors_running
		WHERE session_id IN (SELECT id FROM sessions WHERE state IN ` + activeStates + `)`
	activeOpenTurnsSQL = `SELECT ` + turnColumns + ` FROM turns
		WHERE session_id IN (SELECT id FROM sessions WHERE state IN ` + activeStates + `)
		AND state IN ('running', 'queued') ORDER BY session_id, seq`
	activePendingPermissionsSQL = `SELECT ` + permissionColumns + ` FROM permission_requests
		WHERE session_id IN (SELECT id FROM sessions WHERE state IN ` + activeStates + `)
		AND state = 'pending' ORDER BY session_id, created_at, rowid`
)

// ActiveSession is an active session (starting, running or waiting for
// input) with what start-up reconciliation decides on: its executor row,
// its running and queued turns in seq order and its pending permission
// requests in the order they were asked.
type ActiveSession struct {
	Session     Session
	Executor    Executor
	OpenTurns   []Turn
	Permissions []Permission
}

// ListActiveSessions returns every active session, oldest first (as
// ListSessionsByState), with its executor row, open turns and pending
// permissions, read in one snapshot. A session without an executor row is
// a session_not_found error, as GetExecutor's.
func (s *Store) ListActiveSessions(ctx context.Context) ([]ActiveSession, error) {
	var out []ActiveSession
	err := s.Snapshot(ctx, func(r *Store) error {
		sessions, err := r.ListSessionsByState(ctx, SessionStarting, SessionRunning, SessionWaitingForInput)
		if err != nil {
			return err
		}
		db := r.db.WithContext(ctx)
		execs, err := queryRows[executorRow](db, toExecutor, nil, activeExecutorsSQL)
		if err != nil {
			return internal(err, "list executors of active sessions")
		}
		turns, err := queryRows[turnRow](db, toTurn, nil, activeOpenTurnsSQL)
		if err != nil {
			return internal(err, "list open turns of active sessions")
		}
		perms, err := queryRows[permissionRow](db, toPermission, nil, activePendingPermissionsSQL)
		if err != nil {
			return internal(err, "list pending permissions of active sessions")
		}
		byID := make(map[string]*ActiveSession, len(sessions))
		out = make([]ActiveSession, len(sessions))
		for i, sess := range sessions {
			out[i].Session = sess
			byID[sess.ID] = &out[i]
		}
		for _, e := range execs {
			if a := byID[e.SessionID]; a != nil {
				a.Executor = e
			}
		}
		// The session set is the same snapshot's, so every row has its
		// session; the rows come grouped by session, in order.
		for _, t := range turns {
			if a := byID[t.SessionID]; a != nil {
				a.OpenTurns = append(a.OpenTurns, t)
			}
		}
		for _, p := range perms {
			if a := byID[p.SessionID]; a != nil {
				a.Permissions = append(a.Permissions, p)
			}
		}
		for i := range out {
			if out[i].Executor.SessionID == "" {
				return sessionNotFound(out[i].Session.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
