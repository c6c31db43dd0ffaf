package store

import (
	"context"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/session"
)

// tool calls ---------------------------------------------------------------------

// UpsertToolCall applies an ACP tool_call or tool_call_update to the tool
// call of turn c.PromptID with id c.ToolCallID (session.ToolCallKey: the
// same id in another turn is another call). A new call is inserted
// (status pending when empty). An existing call is a partial update, as
// in ACP: only the fields given (non-empty strings, non-nil JSON,
// Interrupted when true) overwrite; CreatedAt stays as first recorded. It
// returns the merged call.
func (s *Store) UpsertToolCall(ctx context.Context, c session.ToolCall) (session.ToolCall, error) {
	var out toolCallRow
	err := s.transaction(ctx, "upsert tool call", func(tx *gorm.DB) error {
		ts := now()
		_, err := getToolCall(tx, c.SessionID, c.Key())
		if errcode.Is(err, errcode.NotFound) {
			if c.Status == "" {
				c.Status = session.ToolPending
			}
			if c.CreatedAt.IsZero() { // else a copy's (a fork's): its original time
				c.CreatedAt = ts
			}
			c.UpdatedAt = ts
			row := fromToolCall(c)
			if err := tx.Create(&row).Error; err != nil {
				if isForeignKeyViolation(err) {
					return sessionNotFound(c.SessionID)
				}
				return internal(err, "insert tool call")
			}
			out = row
			return nil
		}
		if err != nil {
			return err
		}
		set := toolCallChanges(c)
		set["updated_at"] = toDBTime(ts)
		if err := tx.Model(&toolCallRow{}).
			Where("session_id = ? AND prompt_id = ? AND tool_call_id = ?", c.SessionID, c.PromptID, c.ToolCallID).
			Updates(set).Error; err != nil {
			return internal(err, "update tool call")
		}
		out, err = getToolCall(tx, c.SessionID, c.Key())
		return err
	})
	if err != nil {
		return session.ToolCall{}, err
	}
	return toToolCall(out), nil
}

// toolCallChanges lists the columns a partial tool call update sets.
func toolCallChanges(c session.ToolCall) map[string]any {
	set := map[string]any{}
	if c.Title != "" {
		set["title"] = c.Title
	}
	if c.Kind != "" {
		set["kind"] = c.Kind
	}
	if c.Status != "" {
		set["status"] = string(c.Status)
	}
	if c.Interrupted {
		set["interrupted"] = true
	}
	for col, v := range map[string][]byte{
		"content": c.Content, "locations": c.Locations,
		"raw_input": c.RawInput, "raw_output": c.RawOutput,
	} {
		if v != nil {
			set[col] = string(v)
		}
	}
	return set
}

// GetToolCall returns the tool call key names in session sessionID, or
// errcode.NotFound (there is no more specific code; tool calls are only
// addressed internally).
func (s *Store) GetToolCall(ctx context.Context, sessionID string, key session.ToolCallKey) (session.ToolCall, error) {
	row, err := getToolCall(s.db.WithContext(ctx), sessionID, key)
	if err != nil {
		return session.ToolCall{}, err
	}
	return toToolCall(row), nil
}

func getToolCall(db *gorm.DB, sessionID string, key session.ToolCallKey) (toolCallRow, error) {
	var row toolCallRow
	err := db.Where("session_id = ? AND prompt_id = ? AND tool_call_id = ?", sessionID, key.PromptID, key.ToolCallID).Take(&row).Error
	if err != nil {
		if isNotFound(err) {
			return toolCallRow{}, errcode.New(errcode.NotFound,
				"tool call %q of turn %q not found in session %q", key.ToolCallID, key.PromptID, sessionID).
				With("toolCallId", key.ToolCallID).With("promptId", key.PromptID)
		}
		return toolCallRow{}, internal(err, "get tool call")
	}
	return row, nil
}

// ListToolCalls returns the session's tool calls in the order they started.
func (s *Store) ListToolCalls(ctx context.Context, sessionID string) ([]session.ToolCall, error) {
	return s.listToolCalls(s.db.WithContext(ctx).Where("session_id = ?", sessionID))
}

// listToolCalls lists the tool calls q selects in the order they started.
func (s *Store) listToolCalls(q *gorm.DB) ([]session.ToolCall, error) {
	var rows []toolCallRow
	// rowid breaks ties between calls started within the same nanosecond.
	if err := q.Order("created_at, rowid").Find(&rows).Error; err != nil {
		return nil, internal(err, "list tool calls")
	}
	out := make([]session.ToolCall, 0, len(rows))
	for _, r := range rows {
		out = append(out, toToolCall(r))
	}
	return out, nil
}

// permissions --------------------------------------------------------------------

// CreatePermission records a permission request from the agent. Defaults: a
// fresh UUID and state pending; CreatedAt is set by the store.
func (s *Store) CreatePermission(ctx context.Context, p session.Permission) (session.Permission, error) {
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	if p.State == "" {
		p.State = session.PermissionPending
	}
	p.CreatedAt = now()
	row := fromPermission(p)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		if isForeignKeyViolation(err) {
			return session.Permission{}, sessionNotFound(p.SessionID)
		}
		return session.Permission{}, internal(err, "create permission")
	}
	return toPermission(row), nil
}

// GetPermission returns one permission request or errcode.PermissionNotFound.
func (s *Store) GetPermission(ctx context.Context, sessionID, id string) (session.Permission, error) {
	row, err := getPermission(s.db.WithContext(ctx), sessionID, id)
	if err != nil {
		return session.Permission{}, err
	}
	return toPermission(row), nil
}

func getPermission(db *gorm.DB, sessionID, id string) (permissionRow, error) {
	var row permissionRow
	if err := db.Where("session_id = ? AND id = ?", sessionID, id).Take(&row).Error; err != nil {
		if isNotFound(err) {
			return permissionRow{}, notFound(errcode.PermissionNotFound, "permission request", id)
		}
		return permissionRow{}, internal(err, "get permission")
	}
	return row, nil
}

// ResolvePermission answers a pending request: state is selected (with
// optionID), cancelled or expired. Only a pending request can be resolved, so
// two racing answers (two tabs, user vs. cancel) resolve it once; the loser
// gets errcode.PermissionResolved with the current state in Details["state"].
func (s *Store) ResolvePermission(ctx context.Context, sessionID, id string, state session.PermissionState, optionID string) (session.Permission, error) {
	if state == session.PermissionPending {
		return session.Permission{}, errcode.New(errcode.InvalidRequest, "a permission request cannot be resolved to pending")
	}
	var out permissionRow
	err := s.transaction(ctx, "resolve permission", func(tx *gorm.DB) error {
		row, err := getPermission(tx, sessionID, id)
		if err != nil {
			return err
		}
		if row.State != string(session.PermissionPending) {
			return errcode.New(errcode.PermissionResolved,
				"permission request %q is already %s", id, row.State).With("state", row.State)
		}
		ts := toDBTime(now())
		// Only a pending request is resolved, in the UPDATE itself: on
		// PostgreSQL two transactions may both have read it pending, and
		// the second's UPDATE, once the first committed, finds it resolved.
		res := tx.Model(&permissionRow{}).Where("session_id = ? AND id = ? AND state = ?", sessionID, id, string(session.PermissionPending)).
			Updates(map[string]any{
				"state":              string(state),
				"selected_option_id": optionID,
				"resolved_at":        ts,
			})
		if res.Error != nil {
			return internal(res.Error, "resolve permission")
		}
		if res.RowsAffected == 0 {
			cur, err := getPermission(tx, sessionID, id)
			if err != nil {
				return err
			}
			return errcode.New(errcode.PermissionResolved,
				"permission request %q is already %s", id, cur.State).With("state", cur.State)
		}
		row.State, row.SelectedOptionID, row.ResolvedAt = string(state), optionID, &ts
		out = row
		return nil
	})
	if err != nil {
		return session.Permission{}, err
	}
	return toPermission(out), nil
}

// ListPermissions returns the session's permission requests in one of states
// (all when none are given), oldest first.
func (s *Store) ListPermissions(ctx context.Context, sessionID string, states ...session.PermissionState) ([]session.Permission, error) {
	q := s.db.WithContext(ctx).Where("session_id = ?", sessionID)
	if len(states) > 0 {
		in := make([]string, len(states))
		for i, st := range states {
			in[i] = string(st)
		}
		q = q.Where("state IN ?", in)
	}
	var rows []permissionRow
	if err := q.Order("created_at, rowid").Find(&rows).Error; err != nil {
		return nil, internal(err, "list permissions")
	}
	out := make([]session.Permission, 0, len(rows))
	for _, r := range rows {
		out = append(out, toPermission(r))
	}
	return out, nil
}
