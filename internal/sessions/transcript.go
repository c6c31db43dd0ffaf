package sessions

import (
	"encoding/json"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// pendingPermission is an agent's open question and the channel that
// carries the user's answer back to the blocked ACP request.
type pendingPermission struct {
	promptID string
	options  []acp.PermissionOption
	reply    chan acp.PermissionOutcome
}

// onUpdate records one session/update in the transcript. Updates outside a
// turn (available commands, modes) are attributed to no prompt.
func (a *actor) onUpdate(gen int, u acp.Update) {
	if gen != a.gen {
		return
	}
	ctx := a.ctx()
	promptID := ""
	if a.running != nil {
		promptID = a.running.turn.PromptID
	}
	var err error
	switch u.Kind {
	case acp.UpdateAgentMessage, acp.UpdateAgentThought:
		role := store.RoleAgent
		if u.Kind == acp.UpdateAgentThought {
			role = store.RoleThought
		}
		if u.Block != nil {
			_, err = a.m.store.AddMessage(ctx, store.Message{SessionID: a.id, PromptID: promptID, Role: role,
				Content: json.RawMessage("[" + string(u.Block) + "]")})
		} else if u.Text != "" {
			_, err = a.m.store.AppendMessageChunk(ctx, a.id, promptID, role, u.Text)
		}
	case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
		_, err = a.m.store.UpsertToolCall(ctx, toolCallRecord(a.id, promptID, u.Tool))
	case acp.UpdatePlan:
		err = a.m.store.SetSessionPlan(ctx, a.id, u.Data)
		if err == nil {
			a.sess.Plan = u.Data
		}
	default:
		// user_message_chunk echoes what we already stored; commands, modes,
		// config options, session info and usage are not transcript.
		return
	}
	if err != nil {
		a.log.Error("persist update", "kind", u.Kind, "err", err)
	}
}

func toolCallRecord(sessionID, promptID string, t *acp.ToolCall) store.ToolCall {
	r := store.ToolCall{SessionID: sessionID, ToolCallID: t.ID, PromptID: promptID,
		Content: t.Content, Locations: t.Locations, RawInput: t.RawInput, RawOutput: t.RawOutput}
	if t.Title != nil {
		r.Title = *t.Title
	}
	if t.Kind != nil {
		r.Kind = *t.Kind
	}
	if t.Status != nil {
		r.Status = store.ToolCallStatus(*t.Status)
	}
	return r
}

// onPermissionRequested persists the question and returns its id, or ""
// when the agent is stale (the caller then answers "cancelled").
func (a *actor) onPermissionRequested(gen int, req acp.PermissionRequest, reply chan acp.PermissionOutcome) string {
	if gen != a.gen || a.stopping {
		return ""
	}
	ctx := a.ctx()
	promptID := ""
	if a.running != nil {
		promptID = a.running.turn.PromptID
		if a.running.turn.CancelRequested {
			return ""
		}
	}
	if req.Tool.ID != "" {
		if _, err := a.m.store.UpsertToolCall(ctx, toolCallRecord(a.id, promptID, &req.Tool)); err != nil {
			a.log.Error("persist permission tool call", "err", err)
		}
	}
	title := ""
	if req.Tool.Title != nil {
		title = *req.Tool.Title
	}
	opts, _ := json.Marshal(req.Options)
	p, err := a.m.store.CreatePermission(ctx, store.Permission{SessionID: a.id, PromptID: promptID,
		ToolCallID: req.Tool.ID, Title: title, Options: opts})
	if err != nil {
		a.log.Error("persist permission request", "err", err)
		return ""
	}
	a.perms[p.ID] = &pendingPermission{promptID: promptID, options: req.Options, reply: reply}
	return p.ID
}

// answerPermission applies a client's answer to a pending request.
func (a *actor) answerPermission(id string, out acp.PermissionOutcome) (store.Permission, error) {
	p, ok := a.perms[id]
	if !ok {
		row, err := a.m.store.GetPermission(a.ctx(), a.id, id)
		if err != nil {
			return store.Permission{}, err
		}
		if row.State == store.PermissionPending {
			// Pending in the store but nobody is waiting: the agent that
			// asked is gone. Expire it so it stops looking answerable.
			return a.m.store.ResolvePermission(a.ctx(), a.id, id, store.PermissionExpired, "")
		}
		return store.Permission{}, errcode.New(errcode.PermissionResolved, "permission request %s is already %s", id, row.State).
			With("state", string(row.State))
	}
	state := store.PermissionCancelled
	if !out.Cancelled {
		valid := false
		for _, o := range p.options {
			valid = valid || o.ID == out.OptionID
		}
		if !valid {
			return store.Permission{}, errcode.New(errcode.InvalidPermissionOpt, "optionId %q is not one of the offered options", out.OptionID)
		}
		state = store.PermissionSelected
	}
	row, err := a.m.store.ResolvePermission(a.ctx(), a.id, id, state, out.OptionID)
	if err != nil {
		return store.Permission{}, err
	}
	delete(a.perms, id)
	p.reply <- out
	return row, nil
}

// resolvePermission closes a pending request without a client answer
// (turn ended, agent gone, request withdrawn).
func (a *actor) resolvePermission(id string, state store.PermissionState, optionID string) {
	p, ok := a.perms[id]
	if !ok {
		return
	}
	delete(a.perms, id)
	if _, err := a.m.store.ResolvePermission(a.ctx(), a.id, id, state, optionID); err != nil && !errcode.Is(err, errcode.PermissionResolved) {
		a.log.Error("persist permission outcome", "err", err)
	}
	p.reply <- acp.PermissionOutcome{Cancelled: true}
}

// closePermissions answers every open request of a turn ("" = all)
// "cancelled" to the agent, as ACP requires when a turn ends, and records
// state: cancelled when the turn was cancelled, expired when the agent went.
func (a *actor) closePermissions(promptID string, state store.PermissionState) {
	for id, p := range a.perms {
		if promptID == "" || p.promptID == promptID {
			a.resolvePermission(id, state, "")
		}
	}
}
