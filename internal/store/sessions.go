package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// Page sizes of ListSessions: a default that suits a sidebar, and a cap that
// keeps one request cheap.
const (
	DefaultSessionPageSize = 50
	MaxSessionPageSize     = 200
)

// SessionFilter selects and pages sessions for ListSessions. Zero values
// mean "no filter".
type SessionFilter struct {
	TaskID string
	States []session.SessionState
	// Limit is the page size: DefaultSessionPageSize when <= 0, capped at
	// MaxSessionPageSize.
	Limit int
	// After is the opaque token returned as next by the previous page.
	After string
	// Query keeps the sessions whose title, or the text of an ended turn,
	// holds every word of it (searchWhere); "" keeps all.
	Query string
	// Archived lists the archived sessions instead of the others.
	Archived bool
}

// CreateSession inserts a session and its executor row in one transaction,
// so a session never exists without the row recovery reads. Defaults: a new
// UUID, a random EventEpoch, MCPServers [] (ACP rejects null), state CREATED;
// the executor gets the session id, runtime standalone and status stopped
// (no process yet). A missing task gives errcode.TaskNotFound.
func (s *Store) CreateSession(ctx context.Context, sess session.Session, exec session.Executor) (session.Session, error) {
	if sess.ID == "" {
		sess.ID = uuid.NewString()
	}
	if sess.EventEpoch == "" {
		sess.EventEpoch = newEpoch()
	}
	if len(sess.MCPServers) == 0 || string(sess.MCPServers) == "null" {
		sess.MCPServers = json.RawMessage("[]")
	}
	if sess.State == "" {
		sess.State = session.SessionCreated
	}
	ts := now()
	sess.CreatedAt, sess.UpdatedAt = ts, ts
	if sess.State.Terminal() && sess.ClosedAt == nil {
		sess.ClosedAt = &ts
	}
	exec.SessionID = sess.ID
	if exec.Runtime == "" {
		exec.Runtime = session.RuntimeStandalone
	}
	if exec.Status == "" {
		exec.Status = session.ExecutorStopped
	}
	exec.UpdatedAt = ts

	row, execRow := fromSession(sess), fromExecutor(exec)
	err := s.transaction(ctx, "create session", func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			if isForeignKeyViolation(err) {
				return notFound(errcode.TaskNotFound, "task", sess.TaskID)
			}
			return internal(err, "create session")
		}
		if err := tx.Create(&execRow).Error; err != nil {
			return internal(err, "create executor row")
		}
		return nil
	})
	if err != nil {
		return session.Session{}, err
	}
	out, err := toSession(row)
	if err != nil {
		return session.Session{}, internal(err, "create session")
	}
	return out, nil
}

// newEpoch returns a random event epoch: 128 bits, so two histories of a
// session never share one.
func newEpoch() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go >= 1.24)
	return hex.EncodeToString(b[:])
}

// GetSession returns one session or errcode.SessionNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (session.Session, error) {
	var row sessionRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if isNotFound(err) {
			return session.Session{}, sessionNotFound(id)
		}
		return session.Session{}, internal(err, "get session")
	}
	out, err := toSession(row)
	if err != nil {
		return session.Session{}, internal(err, "get session")
	}
	return out, nil
}

// pageToken is the decoded form of a list's opaque page token: the keyset
// (time, id) of the last item of the previous page (a session's
// created_at, an inbox item's at). Keyset rather than offset paging stays
// correct while items come and go.
type pageToken struct {
	At string `json:"c"`
	ID string `json:"i"`
}

// String is the token as a client holds it.
func (t pageToken) String() string { return encodeToken(t) }

func decodePageToken(s string) (pageToken, error) {
	var t pageToken
	if err := decodeToken(s, &t); err != nil || t.At == "" || t.ID == "" {
		return pageToken{}, errcode.New(errcode.InvalidRequest, "invalid page token")
	}
	return t, nil
}

// encodeToken and decodeToken are the opaque form of every page token
// (lists' keysets, transcript pages): JSON in unpadded base64url.
func encodeToken(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// ListSessions returns one page of sessions, newest first (created_at desc,
// id desc), and the token of the next page ("" on the last page). A
// malformed After gives errcode.InvalidRequest.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]session.Session, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultSessionPageSize
	}
	limit = min(limit, MaxSessionPageSize)

	q := s.db.WithContext(ctx).Model(&sessionRow{})
	if f.TaskID != "" {
		q = q.Where("task_id = ?", f.TaskID)
	}
	if len(f.States) > 0 {
		q = q.Where("state IN ?", sessionStateStrings(f.States))
	}
	q = q.Where("archived = ?", f.Archived)
	if f.Query != "" {
		where, args, ok := s.searchWhere(f.Query)
		if !ok {
			return nil, "", nil // no word to look for: nothing holds it
		}
		q = q.Where(where, args...)
	}
	if f.After != "" {
		tok, err := decodePageToken(f.After)
		if err != nil {
			return nil, "", err
		}
		q = q.Where("(created_at, id) < (?, ?)", tok.At, tok.ID)
	}
	var rows []sessionRow
	// One extra row tells whether another page exists without a COUNT.
	if err := q.Order("created_at DESC, id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, "", internal(err, "list sessions")
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		ts, _ := rows[limit-1].CreatedAt.Value() // never fails
		next = pageToken{At: ts.(string), ID: rows[limit-1].ID}.String()
	}
	out, err := toSessions(rows)
	if err != nil {
		return nil, "", internal(err, "list sessions")
	}
	if err := s.LastActivity(ctx, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// ListSessionsByState returns every session in one of states (all sessions
// when none are given), oldest first: start-up recovery walks them in the
// order they were created.
func (s *Store) ListSessionsByState(ctx context.Context, states ...session.SessionState) ([]session.Session, error) {
	q := s.db.WithContext(ctx).Model(&sessionRow{})
	if len(states) > 0 {
		q = q.Where("state IN ?", sessionStateStrings(states))
	}
	var rows []sessionRow
	if err := q.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, internal(err, "list sessions by state")
	}
	out, err := toSessions(rows)
	if err != nil {
		return nil, internal(err, "list sessions by state")
	}
	return out, nil
}

func sessionStateStrings(states []session.SessionState) []string {
	out := make([]string, len(states))
	for i, st := range states {
		out[i] = string(st)
	}
	return out
}

// UpdateSessionState moves a session to state. Entering a terminal state
// records closed_at (keeping the first close time); any other state clears it.
func (s *Store) UpdateSessionState(ctx context.Context, id string, state session.SessionState) error {
	q := sessionStateSQL
	if state.Terminal() {
		q = sessionClosedStateSQL
	}
	return updateRow(s.db.WithContext(ctx), "update session", func() error { return sessionNotFound(id) },
		q, string(state), toDBTime(now()), id)
}

// SetSessionPlan stores the latest ACP plan; nil clears it.
func (s *Store) SetSessionPlan(ctx context.Context, id string, plan json.RawMessage) error {
	return s.updateSession(ctx, id, map[string]any{"plan": jsonText(plan)})
}

// SetSessionChoices stores the mode ("" for the agent's default) and the
// config option values (a JSON object of option id -> value) the user
// chose, the projection of session.choices_changed.
func (s *Store) SetSessionChoices(ctx context.Context, id, modeID string, config json.RawMessage) error {
	return s.updateSession(ctx, id, map[string]any{"mode_choice": modeID, "config_choices": objectText(config)})
}

// MarkSessionPrompted records that a turn was admitted, so a restore never
// sends the initial prompt again.
func (s *Store) MarkSessionPrompted(ctx context.Context, id string) error {
	return s.updateSession(ctx, id, map[string]any{"prompted": true})
}

// SetSessionContextLost records whether the agent lost the conversation on
// its last restore (surfaced to users as a notice).
func (s *Store) SetSessionContextLost(ctx context.Context, id string, lost bool) error {
	return s.updateSession(ctx, id, map[string]any{"context_lost": lost})
}

// SetSessionInjectContext records whether the next prompt owes the resume
// context (history injection).
func (s *Store) SetSessionInjectContext(ctx context.Context, id string, pending bool) error {
	return s.updateSession(ctx, id, map[string]any{"inject_context": pending})
}

// SetSessionQueueHeld records whether the session's queued turns wait for
// the user (set by start-up reconciliation, cleared by continue or prompt).
func (s *Store) SetSessionQueueHeld(ctx context.Context, id string, held bool) error {
	return updateRow(s.db.WithContext(ctx), "update session", func() error { return sessionNotFound(id) },
		sessionQueueHeldSQL, held, toDBTime(now()), id)
}

func (s *Store) updateSession(ctx context.Context, id string, set map[string]any) error {
	if _, ok := set["updated_at"]; !ok {
		set["updated_at"] = toDBTime(now())
	}
	return updateByID(s.db.WithContext(ctx), "sessions", id, set, errcode.SessionNotFound, "session")
}

// GetExecutor returns the executor row of a session or
// errcode.SessionNotFound (every session has one).
func (s *Store) GetExecutor(ctx context.Context, sessionID string) (session.Executor, error) {
	if err := s.flushOffsets(ctx); err != nil {
		return session.Executor{}, err
	}
	rows, err := queryRows[executorRow](s.db.WithContext(ctx), toExecutor, nil,
		`SELECT `+executorColumns+` FROM executors_running WHERE session_id = ?`, sessionID)
	if err != nil {
		return session.Executor{}, internal(err, "get executor")
	}
	if len(rows) == 0 {
		return session.Executor{}, sessionNotFound(sessionID)
	}
	return rows[0], nil
}

// ExecutorsOf returns the executor rows of the given sessions by session
// id, in one query (a list page's rows without one query per session).
// Sessions without a row are absent from the map.
func (s *Store) ExecutorsOf(ctx context.Context, sessionIDs []string) (map[string]session.Executor, error) {
	out := make(map[string]session.Executor, len(sessionIDs))
	if len(sessionIDs) == 0 {
		return out, nil
	}
	if err := s.flushOffsets(ctx); err != nil {
		return nil, err
	}
	args := make([]any, len(sessionIDs))
	for i, id := range sessionIDs {
		args[i] = id
	}
	rows, err := queryRows[executorRow](s.db.WithContext(ctx), toExecutor, nil,
		`SELECT `+executorColumns+` FROM executors_running WHERE session_id IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return nil, internal(err, "list executors of sessions")
	}
	for _, e := range rows {
		out[e.SessionID] = e
	}
	return out, nil
}

// UpdateExecutor replaces every column of the session's executor row but
// its host offsets with e (read-modify-write is the caller's job, inside
// its session actor) and stamps UpdatedAt.
func (s *Store) UpdateExecutor(ctx context.Context, e session.Executor) error {
	e.UpdatedAt = now()
	r := fromExecutor(e)
	return updateRow(s.db.WithContext(ctx), "update executor", func() error { return sessionNotFound(e.SessionID) },
		updateExecutorSQL, r.Runtime, r.Status, r.AgentExecutionID, r.PID, r.Host, r.ResumeToken,
		r.SupportsSessionResume, r.SupportsLoad, r.SupportsWorkspaceOnly, r.WorktreePath, r.WorktreeBranch,
		r.WorktreeRepo, r.WorktreeState, r.LastSeenAt, r.ErrorMessage, r.ErrorCode, r.ErrorProfile, r.ExitCode, r.ExitSignal, r.Sandbox, r.SandboxReason, r.UpdatedAt, e.SessionID)
}

// SetExecutorPID records the pid of the session's agent while it starts,
// before any event tells it: should the daemon die mid-start, the next
// start-up finds the process and stops it as an orphan. The
// session.executor_status that ends the start carries the pid.
func (s *Store) SetExecutorPID(ctx context.Context, sessionID string, pid int) error {
	return updateRow(s.db.WithContext(ctx), "set executor pid", func() error { return sessionNotFound(sessionID) },
		`UPDATE executors_running SET pid = ?, updated_at = ? WHERE session_id = ?`, pid, toDBTime(now()), sessionID)
}

// SetExecutorOffset records that the daemon has committed the records of
// the session's host outbox up to offset (absolute: Executor.HostOffset),
// for a record whose change wrote no event to carry it (Event.HostOffset);
// it runs in the transaction of what the record caused.
//
// Inside a transaction (the writer's batch) it only notes the offset, and
// the latest one of each session is written when the transaction ends, or
// first when something in it reads executor rows: a batch of a session's
// records costs one UPDATE instead of one each (an unknown session then
// fails the batch at its end).
func (s *Store) SetExecutorOffset(ctx context.Context, sessionID string, offset uint64) error {
	return s.noteOffset(ctx, pendingOffset{sessionID: sessionID, offset: offset})
}

// ResetExecutorOffset starts the numbering of a new agent's outbox (which
// starts again at 1 on its host) at base: its record n is base+n. base
// must be at least every offset committed for the session so far (the
// session's actor keeps the highest), so offsets only grow.
func (s *Store) ResetExecutorOffset(ctx context.Context, sessionID string, base uint64) error {
	return s.noteOffset(ctx, pendingOffset{sessionID: sessionID, offset: base, base: base, reset: true})
}

// pendingOffset is an offset SetExecutorOffset or ResetExecutorOffset
// noted in a transaction.
type pendingOffset struct {
	sessionID    string
	offset, base uint64
	reset        bool
}

func (s *Store) noteOffset(ctx context.Context, o pendingOffset) error {
	if !s.inTx {
		return s.writeExecutorOffset(ctx, o)
	}
	for i := range s.offsets {
		if p := &s.offsets[i]; p.sessionID == o.sessionID {
			if !o.reset { // a later record keeps the batch's reset, if any
				o.base, o.reset = p.base, p.reset
			}
			*p = o
			return nil
		}
	}
	s.offsets = append(s.offsets, o)
	return nil
}

func (s *Store) writeExecutorOffset(ctx context.Context, o pendingOffset) error {
	return updateRow(s.db.WithContext(ctx), "set executor offset", func() error { return sessionNotFound(o.sessionID) },
		executorOffsetSQL, o.offset, o.sessionID, o.reset, o.base)
}

// flushOffsets writes the offsets queued in this transaction. Outside a
// transaction there are none, and the Store is shared by every goroutine:
// it touches nothing then.
func (s *Store) flushOffsets(ctx context.Context) error {
	if !s.inTx || len(s.offsets) == 0 {
		return nil
	}
	defer func() { s.offsets = s.offsets[:0] }()
	for _, o := range s.offsets {
		if err := s.writeExecutorOffset(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// ListExecutorsByStatus returns the executor rows in one of statuses (all
// rows when none are given), by session id.
func (s *Store) ListExecutorsByStatus(ctx context.Context, statuses ...session.ExecutorStatus) ([]session.Executor, error) {
	if err := s.flushOffsets(ctx); err != nil {
		return nil, err
	}
	query := `SELECT ` + executorColumns + ` FROM executors_running`
	args := make([]any, len(statuses))
	for i, st := range statuses {
		args[i] = string(st)
	}
	if len(args) > 0 {
		query += ` WHERE status IN (` + placeholders(len(args)) + `)`
	}
	out, err := queryRows[executorRow](s.db.WithContext(ctx), toExecutor, nil, query+` ORDER BY session_id`, args...)
	if err != nil {
		return nil, internal(err, "list executors")
	}
	return out, nil
}

// placeholders is n comma-separated "?".
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}
