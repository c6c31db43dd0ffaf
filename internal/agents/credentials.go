package agents

import (
	"context"
	"encoding/json"
	"time"
)

// Credential states: what an agent did the last time tetherd saw it need
// credentials or not.
const (
	// CredentialsRequired: the agent asked for credentials (ACP -32000).
	CredentialsRequired = "required"
	// CredentialsOK: the agent worked at that stage.
	CredentialsOK = "ok"
)

// Stages at which an agent asks for credentials.
const (
	// StageStart is initialize, authenticate or session/new (a probe, a
	// session's start, the check before a session is created).
	StageStart = "start"
	// StagePrompt is a prompt: agents that check only when they call their
	// model (claude-agent-acp announces no auth methods and fails there).
	StagePrompt = "prompt"
)

// Credentials is what tetherd last saw of a profile's credentials on this
// machine. It is an observation, never a prediction: an agent may keep its
// credentials where tetherd cannot see them (a login made in a terminal, a
// file it reads), so a state is trusted only while the profile's
// Fingerprint is the one it was seen under, and a refusal built on it must
// see it again first (sessions.Manager.Create does).
type Credentials struct {
	// Status is CredentialsRequired or CredentialsOK.
	Status string `json:"status"`
	// Stage is StageStart or StagePrompt.
	Stage string `json:"stage"`
	// Message says, for CredentialsRequired, what the agent said and what
	// to do (the agent_auth_required error's message).
	Message string `json:"message,omitempty"`
	// SessionID is the session it was seen in; "" for a probe.
	SessionID string `json:"sessionId,omitempty"`
	// ObservedAt is when.
	ObservedAt time.Time `json:"observedAt"`
	// Fingerprint is the profile's Fingerprint when it was seen.
	Fingerprint string `json:"fingerprint"`
}

// NeedsCheck reports whether the profile's agent asked for credentials at
// its start the last time: a new session would most likely fail the same
// way, which only starting the agent again can confirm.
func (c *Credentials) NeedsCheck() bool {
	return c != nil && c.Status == CredentialsRequired && c.Stage == StageStart
}

// RecordCredentials records what the profile's agent just showed of its
// credentials (Status, Stage, Message, SessionID of c; the time and the
// fingerprint are set here), in memory and in the store. One rule decides
// what a newer observation replaces: an agent that starts says nothing of
// a prompt, so "ok" at the start leaves what a prompt showed in place
// ("required" stays; "ok" is already known); anything else replaces what
// was there.
func (r *Registry) RecordCredentials(ctx context.Context, id string, c Credentials) error {
	c.Fingerprint = r.Fingerprint(id)
	if c.Fingerprint == "" {
		return nil // unknown or unavailable: nothing runs under it
	}
	c.ObservedAt = time.Now().UTC()
	return r.update(ctx, id, "credentials", func(p *Profile) bool {
		if old := p.Credentials; old != nil && old.Fingerprint == c.Fingerprint && c.Status == CredentialsOK {
			if c.Stage == StageStart && old.Stage == StagePrompt {
				return false // a start says nothing of a prompt
			}
			if old.Status == c.Status && old.Stage == c.Stage {
				return false // every working start would write the same row again
			}
		}
		p.Credentials = &c
		return true
	})
}

// restoreCredentials takes a stored observation back if it was made under
// the profile's current fingerprint; one made under another configuration
// (a key set since, another command) says nothing of this one.
func (r *Registry) restoreCredentials(id string, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var c Credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		r.logger.Warn("ignoring unreadable stored agent credentials", "agent", id, "err", err)
		return
	}
	if c.Fingerprint == "" || c.Fingerprint != r.Fingerprint(id) {
		r.logger.Debug("agent configuration changed since its credentials were seen; dropped", "agent", id)
		return
	}
	r.mu.Lock()
	if p, ok := r.profiles[id]; ok {
		p.Credentials = &c
	}
	r.mu.Unlock()
}

// marshalCredentials is the stored form of c (nil for none).
func marshalCredentials(c *Credentials) json.RawMessage {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain values only
	}
	return b
}
