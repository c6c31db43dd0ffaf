package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// CreateTurn inserts a turn and assigns its Seq (one more than the session's
// highest) in the same transaction, so concurrent admissions can never share
// a seq. Defaults: a fresh UUID prompt id, state queued; CreatedAt is set by the store. A prompt id
// already used in the session gives errcode.PromptIDConflict (the session
// layer then returns the existing turn for idempotent retries); a missing
// session gives errcode.SessionNotFound.
func (s *Store) CreateTurn(ctx context.Context, t session.Turn) (session.Turn, error) {
	if t.PromptID == "" {
		t.PromptID = uuid.NewString()
	}
	if t.State == "" {
		t.State = session.TurnQueued
	}
	t.CreatedAt = now()
	var row turnRow
	err := s.transaction(ctx, "create turn", func(tx *gorm.DB) error {
		if err := s.lockSession(tx, t.SessionID); err != nil {
			return err
		}
		var maxSeq int64
		if err := tx.Model(&turnRow{}).Where("session_id = ?", t.SessionID).
			Select("COALESCE(MAX(seq), 0)").Scan(&maxSeq).Error; err != nil {
			return internal(err, "create turn")
		}
		t.Seq = maxSeq + 1
		row = fromTurn(t)
		if err := tx.Create(&row).Error; err != nil {
			switch {
			case isUniqueViolation(err):
				return errcode.New(errcode.PromptIDConflict,
					"prompt id %q is already used in session %q", t.PromptID, t.SessionID).
					With("promptId", t.PromptID)
			case isForeignKeyViolation(err):
				return sessionNotFound(t.SessionID)
			}
			return internal(err, "create turn")
		}
		return nil
	})
	if err != nil {
		return session.Turn{}, err
	}
	return toTurn(row), nil
}

// GetTurn returns one turn or errcode.TurnNotFound.
func (s *Store) GetTurn(ctx context.Context, sessionID, promptID string) (session.Turn, error) {
	var row turnRow
	err := s.db.WithContext(ctx).
		Where("session_id = ? AND prompt_id = ?", sessionID, promptID).Take(&row).Error
	if err != nil {
		if isNotFound(err) {
			return session.Turn{}, errcode.New(errcode.TurnNotFound,
				"turn %q not found in session %q", promptID, sessionID).With("promptId", promptID)
		}
		return session.Turn{}, internal(err, "get turn")
	}
	return toTurn(row), nil
}

// ListTurns returns the session's turns in admission order (seq).
func (s *Store) ListTurns(ctx context.Context, sessionID string) ([]session.Turn, error) {
	return s.ListTurnsByState(ctx, sessionID)
}

// ListTurnsByState returns the session's turns in one of states (all turns
// when none are given), by seq. Recovery uses it to find running/queued
// turns to interrupt.
func (s *Store) ListTurnsByState(ctx context.Context, sessionID string, states ...session.TurnState) ([]session.Turn, error) {
	q := s.db.WithContext(ctx).Where("session_id = ?", sessionID)
	if len(states) > 0 {
		in := make([]string, len(states))
		for i, st := range states {
			in[i] = string(st)
		}
		q = q.Where("state IN ?", in)
	}
	var rows []turnRow
	if err := q.Order("seq").Find(&rows).Error; err != nil {
		return nil, internal(err, "list turns")
	}
	out := make([]session.Turn, 0, len(rows))
	for _, r := range rows {
		out = append(out, toTurn(r))
	}
	return out, nil
}

// SetTurnWorkspaceChanges records what an interrupted turn changed in its
// workspace (Turn.WorkspaceChanges). UpdateTurn leaves it as it is.
func (s *Store) SetTurnWorkspaceChanges(ctx context.Context, sessionID, promptID string, changes json.RawMessage) error {
	return updateRow(s.db.WithContext(ctx), "set turn workspace changes", func() error {
		return errcode.New(errcode.TurnNotFound, "turn %q not found in session %q", promptID, sessionID).With("promptId", promptID)
	}, `UPDATE turns SET workspace_changes = ? WHERE session_id = ? AND prompt_id = ?`, jsonText(changes), sessionID, promptID)
}

// UpdateTurn replaces the mutable columns of the turn keyed by (SessionID,
// PromptID) with t. Seq and CreatedAt are fixed at creation and ignored here.
func (s *Store) UpdateTurn(ctx context.Context, t session.Turn) error {
	r := fromTurn(t)
	return updateRow(s.db.WithContext(ctx), "update turn", func() error {
		return errcode.New(errcode.TurnNotFound,
			"turn %q not found in session %q", t.PromptID, t.SessionID).With("promptId", t.PromptID)
	}, updateTurnSQL, r.Kind, r.State, r.Prompt, r.StopReason, r.ErrorCode, r.ErrorMessage, r.InterruptReason,
		r.ExitCode, r.ExitSignal, r.ContinuesPromptID, r.CancelRequested, r.ContextInjected,
		r.StartedAt, r.DeliveredAt, r.EndedAt, t.SessionID, t.PromptID)
}

// EndTurn records t's end, the projection of its terminal event
// (turn.completed, failed, cancelled or interrupted): its state, outcome
// and end time, and the cancel request a cancelled turn's event carries.
// Nothing else of the row changes: its start and delivery are their own
// events' to write, and an end must not record one whose event the store
// refused.
func (s *Store) EndTurn(ctx context.Context, t session.Turn) error {
	r := fromTurn(t)
	err := updateRow(s.db.WithContext(ctx), "end turn", func() error {
		return errcode.New(errcode.TurnNotFound,
			"turn %q not found in session %q", t.PromptID, t.SessionID).With("promptId", t.PromptID)
	}, endTurnSQL, r.State, r.StopReason, r.ErrorCode, r.ErrorMessage, r.InterruptReason,
		r.ExitCode, r.ExitSignal, r.EndedAt, t.SessionID, t.PromptID)
	if err != nil || t.State != session.TurnCancelled || !t.CancelRequested {
		return err
	}
	return s.SetTurnCancelRequested(ctx, t.SessionID, t.PromptID)
}

// StartTurn records that the turn went to its agent at at (and whether
// its prompt carried the resume context), the projection of turn.started.
func (s *Store) StartTurn(ctx context.Context, sessionID, promptID string, at time.Time, contextInjected bool) error {
	return updateRow(s.db.WithContext(ctx), "start turn", func() error {
		return errcode.New(errcode.TurnNotFound,
			"turn %q not found in session %q", promptID, sessionID).With("promptId", promptID)
	}, turnStartedSQL, string(session.TurnRunning), toDBTime(at), contextInjected, sessionID, promptID)
}

// SetTurnDelivered records when the turn's prompt reached the agent (nil:
// it did not), the projection of turn.delivered.
func (s *Store) SetTurnDelivered(ctx context.Context, sessionID, promptID string, at *time.Time) error {
	return updateRow(s.db.WithContext(ctx), "update turn", func() error {
		return errcode.New(errcode.TurnNotFound,
			"turn %q not found in session %q", promptID, sessionID).With("promptId", promptID)
	}, turnDeliveredSQL, toDBTimePtr(at), sessionID, promptID)
}

// SetTurnCancelRequested records the user's cancel of the turn, the
// projection of turn.cancel_requested.
func (s *Store) SetTurnCancelRequested(ctx context.Context, sessionID, promptID string) error {
	return updateRow(s.db.WithContext(ctx), "update turn", func() error {
		return errcode.New(errcode.TurnNotFound,
			"turn %q not found in session %q", promptID, sessionID).With("promptId", promptID)
	}, turnCancelRequestedSQL, true, sessionID, promptID)
}
