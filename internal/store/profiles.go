package store

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm/clause"

	"github.com/tether/tether/internal/errcode"
)

// AgentProfile is a launchable agent: command, args and env come only from
// the daemon's configuration.
type AgentProfile struct {
	ID                      string
	DisplayName             string
	Command                 string
	Args                    []string
	Env                     map[string]string
	Source                  string // builtin | config | detected
	Available               bool
	UnavailableReason       string
	NativeSessionResume     bool
	HistoryContextInjection bool
	ResumeArgs              []string
	// Capabilities is the probed ACP agentCapabilities JSON, nil until probed.
	Capabilities json.RawMessage
	ProbedAt     *time.Time
	// Credentials is what was last seen of the agent's credentials
	// (agents.Credentials as JSON), nil until seen.
	Credentials json.RawMessage
	UpdatedAt   time.Time
}

// UpsertAgentProfile inserts or replaces a profile from the daemon's
// configuration or PATH detection. Capabilities and ProbedAt are only
// overwritten when p.Capabilities is non-nil, and Credentials when
// p.Credentials is, so re-registering profiles at every start-up keeps the
// last probe result and the last credentials seen.
func (s *Store) UpsertAgentProfile(ctx context.Context, p AgentProfile) error {
	p.UpdatedAt = now()
	row := fromAgentProfile(p)
	cols := []string{
		"display_name", "command", "args", "env", "source", "available",
		"unavailable_reason", "native_session_resume", "history_context_injection",
		"resume_args", "updated_at",
	}
	if p.Capabilities != nil {
		cols = append(cols, "capabilities", "probed_at")
	}
	if p.Credentials != nil {
		cols = append(cols, "credentials")
	}
	err := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns(cols),
	}).Create(&row).Error
	if err != nil {
		return internal(err, "upsert agent profile")
	}
	return nil
}

// ListAgentProfiles returns every profile, by id.
func (s *Store) ListAgentProfiles(ctx context.Context) ([]AgentProfile, error) {
	var rows []agentProfileRow
	if err := s.db.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, internal(err, "list agent profiles")
	}
	out := make([]AgentProfile, 0, len(rows))
	for _, r := range rows {
		p, err := toAgentProfile(r)
		if err != nil {
			return nil, internal(err, "list agent profiles")
		}
		out = append(out, p)
	}
	return out, nil
}

// GetAgentProfile returns one profile or errcode.AgentProfileNotFound.
func (s *Store) GetAgentProfile(ctx context.Context, id string) (AgentProfile, error) {
	var row agentProfileRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if isNotFound(err) {
			return AgentProfile{}, notFound(errcode.AgentProfileNotFound, "agent profile", id)
		}
		return AgentProfile{}, internal(err, "get agent profile")
	}
	p, err := toAgentProfile(row)
	if err != nil {
		return AgentProfile{}, internal(err, "get agent profile")
	}
	return p, nil
}

// SetAgentCapabilities records the result of a capability probe (the
// agent's ACP agentCapabilities JSON) and when it was taken.
func (s *Store) SetAgentCapabilities(ctx context.Context, id string, caps json.RawMessage, probedAt time.Time) error {
	return updateByID(s.db.WithContext(ctx), "agent_profiles", id, map[string]any{
		"capabilities": jsonText(caps),
		"probed_at":    toDBTime(probedAt),
		"updated_at":   toDBTime(now()),
	}, errcode.AgentProfileNotFound, "agent profile")
}
