package store

import (
	"context"

	"github.com/tether/tether/internal/session"
)

// Reads for start-up reconciliation. Before the API listens, tetherd looks
// at every active session's executor row, open turns and pending
// permissions. Read one session at a time that is three queries per
// session (3,000 for 1,000 sessions, most of them with nothing to repair).
// These read the sessions left at rest (waiting for input, agent stopped,
// nothing open) as ids alone, and only the others whole, with their
// executor rows, open turns and pending permissions: five queries from one
// snapshot, whatever the number of sessions. Closed sessions are read too
// when their close left something open (the store refused those writes).

// activeStates are the session states start-up reconciliation looks at.
const activeStates = `('` + string(session.SessionStarting) + `', '` + string(session.SessionRunning) + `', '` + string(session.SessionWaitingForInput) + `')`

// atRestSQL selects the active sessions with nothing to repair: waiting for
// input, their agent stopped or failed, no running or queued turn and no
// pending permission. A session without an executor row is not at rest.
const atRestSQL = `SELECT s.id FROM sessions s JOIN executors_running e ON e.session_id = s.id
	WHERE s.state = '` + string(session.SessionWaitingForInput) + `'
	AND e.status IN ('` + string(session.ExecutorStopped) + `', '` + string(session.ExecutorError) + `')
	AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.state IN ('running', 'queued'))
	AND NOT EXISTS (SELECT 1 FROM permission_requests p WHERE p.session_id = s.id AND p.state = 'pending')`

// closedStates are the states of a closed session.
const closedStates = `('` + string(session.SessionCompleted) + `', '` + string(session.SessionFailed) + `', '` + string(session.SessionCancelled) + `')`

// leftOpenSQL selects the closed sessions their close left with an open
// turn, a pending permission or a live executor (the store refused those
// writes): start-up closes them.
const leftOpenSQL = `SELECT s.id FROM sessions s WHERE s.state IN ` + closedStates + `
	AND (EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.state IN ('running', 'queued'))
	OR EXISTS (SELECT 1 FROM permission_requests p WHERE p.session_id = s.id AND p.state = 'pending')
	OR EXISTS (SELECT 1 FROM executors_running e WHERE e.session_id = s.id
		AND e.status IN ('` + string(session.ExecutorReady) + `', '` + string(session.ExecutorStarting) + `', '` + string(session.ExecutorReconnecting) + `')))`

// toRepairSQL selects the other active sessions, and the closed ones left
// open.
const toRepairSQL = `SELECT id FROM sessions WHERE state IN ` + activeStates + ` AND id NOT IN (` + atRestSQL + `)
	UNION ` + leftOpenSQL

// openSessionsSQL selects the sessions whose open turns and pending
// permissions start-up reads: the active ones and the closed ones left
// open (the sessions at rest have none).
const openSessionsSQL = `SELECT id FROM sessions WHERE state IN ` + activeStates + ` UNION ` + leftOpenSQL

const (
	atRestSessionsSQL = `SELECT id, task_id, agent_profile_id FROM sessions WHERE id IN (` + atRestSQL + `)
		ORDER BY created_at, id`
	repairExecutorsSQL = `SELECT ` + executorColumns + ` FROM executors_running
		WHERE session_id IN (` + toRepairSQL + `)`
	activeOpenTurnsSQL = `SELECT ` + turnColumns + ` FROM turns
		WHERE session_id IN (` + openSessionsSQL + `)
		AND state IN ('running', 'queued') ORDER BY session_id, seq`
	activePendingPermissionsSQL = `SELECT ` + permissionColumns + ` FROM permission_requests
		WHERE session_id IN (` + openSessionsSQL + `)
		AND state = 'pending' ORDER BY session_id, created_at, rowid`
)

// ActiveSessions are the active sessions (starting, running or waiting
// for input), and the closed ones their close left open, as start-up
// reconciliation reads them.
type ActiveSessions struct {
	// AtRest are the sessions with nothing to repair: waiting for input,
	// their agent stopped or failed, no running or queued turn, no pending
	// permission. Oldest first.
	AtRest []SessionRef
	// ToRepair are the others, and the closed sessions left with an open
	// turn, a pending permission or a live executor, oldest first.
	ToRepair []ActiveSession
}

// SessionRef names a session, its task and its agent profile.
type SessionRef struct {
	ID, TaskID, AgentProfileID string
}

func (r *SessionRef) fields() []any { return []any{&r.ID, &r.TaskID, &r.AgentProfileID} }

// ActiveSession is an active session with what start-up reconciliation
// decides on: its executor row, its running and queued turns in seq order
// and its pending permission requests in the order they were asked.
type ActiveSession struct {
	Session     session.Session
	Executor    session.Executor
	OpenTurns   []session.Turn
	Permissions []session.Permission
}

// ListActiveSessions returns every active session, read in one snapshot:
// those at rest by id, the others whole. A session to repair without an
// executor row is a session_not_found error, as GetExecutor's.
func (s *Store) ListActiveSessions(ctx context.Context) (ActiveSessions, error) {
	var out ActiveSessions
	err := s.Snapshot(ctx, func(r *Store) error {
		db := r.db.WithContext(ctx)
		var err error
		out.AtRest, err = queryRows[SessionRef](db, func(r SessionRef) SessionRef { return r }, nil, atRestSessionsSQL)
		if err != nil {
			return internal(err, "list active sessions")
		}
		var rows []sessionRow
		if err := db.Where("id IN (" + toRepairSQL + ")").Order("created_at, id").Find(&rows).Error; err != nil {
			return internal(err, "list active sessions")
		}
		sessions, err := toSessions(rows)
		if err != nil {
			return internal(err, "list active sessions")
		}
		execs, err := queryRows[executorRow](db, toExecutor, nil, repairExecutorsSQL)
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
		out.ToRepair = make([]ActiveSession, len(sessions))
		for i, sess := range sessions {
			out.ToRepair[i].Session = sess
			byID[sess.ID] = &out.ToRepair[i]
		}
		for _, e := range execs {
			if a := byID[e.SessionID]; a != nil {
				a.Executor = e
			}
		}
		// Same snapshot: every open turn and pending permission belongs
		// to a session to repair; the rows come grouped by session, in
		// order.
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
		for _, a := range out.ToRepair {
			if a.Executor.SessionID == "" {
				return sessionNotFound(a.Session.ID)
			}
		}
		return nil
	})
	if err != nil {
		return ActiveSessions{}, err
	}
	return out, nil
}
