package session

import "time"

// The events of forks and rewinds (docs/rewind.md; see events.go for what
// a domain event is).

// SessionForkedData is the payload of session.forked, which ends a
// fork's copy (session.created, then each copied turn's events, then
// this): where it came from, and what of the origin's workspace it got.
type SessionForkedData struct {
	EventCommon
	FromSessionID string `json:"fromSessionId"`
	// AtPromptID is the origin's turn the fork copies up to, included.
	AtPromptID string `json:"atPromptId"`
	// Handoff: the fork shares the origin's directory (another agent
	// continues there); otherwise the turn's end state was restored into
	// the fork's own directory.
	Handoff bool `json:"handoff,omitempty"`
	// Workspace says where the fork's files came from: the checkpoint
	// source (workspace.Source*: end, next_start, current) and how many
	// files were written; empty for a hand-off.
	Source  string `json:"source,omitempty"`
	Written int    `json:"written,omitempty"`
	// Turns counts the turns copied.
	Turns int `json:"turns"`
}

// EventType is session.forked.
func (*SessionForkedData) EventType() string { return "session.forked" }

// OnGlobalStream: session.forked also goes to GET /events (the origin's
// viewers learn of the fork there).
func (*SessionForkedData) OnGlobalStream() {}

// Origin is the fork's origin record.
func (p *SessionForkedData) Origin() *ForkOrigin {
	return &ForkOrigin{SessionID: p.FromSessionID, PromptID: p.AtPromptID, Handoff: p.Handoff}
}

// evolve folds SessionForkedData into s (State.Evolve).
func (p *SessionForkedData) evolve(s *State, e Event) error {
	s.Session.ForkedFrom = p.Origin()
	return nil
}

// SessionRewoundData is the payload of session.rewound: the session's
// files went back to the end of ToPromptID (a rewind) or to before the
// rewind Undoes (an undo), after a safety checkpoint named RewindID; the
// turns Rewound are marked so (kept in the transcript, left out of the
// agent's context), those Restored unmarked.
type SessionRewoundData struct {
	EventCommon
	RewindID   string   `json:"rewindId"`
	ToPromptID string   `json:"toPromptId,omitempty"`
	Undoes     string   `json:"undoes,omitempty"`
	Rewound    []string `json:"rewound"`
	Restored   []string `json:"restored,omitempty"`
	// Files are the files the restore changed, as path → status (the
	// directory's view: added means it came back).
	Files []ChangedFile `json:"files"`
	// Turns is how many turns the session had (Rewind.Turns).
	Turns int `json:"turns"`
	// At is when the files were restored.
	At time.Time `json:"at"`
}

// EventType is session.rewound.
func (*SessionRewoundData) EventType() string { return "session.rewound" }

// OnGlobalStream: session.rewound also goes to GET /events.
func (*SessionRewoundData) OnGlobalStream() {}

// Rewind is the session's rewind record p makes.
func (p *SessionRewoundData) Rewind() *Rewind {
	return &Rewind{ID: p.RewindID, ToPromptID: p.ToPromptID, Undoes: p.Undoes, Rewound: p.Rewound, Restored: p.Restored,
		Turns: p.Turns, At: p.At}
}

// evolve folds SessionRewoundData into s (State.Evolve).
func (p *SessionRewoundData) evolve(s *State, e Event) error {
	for _, id := range p.Rewound {
		t, err := s.knownTurn(id)
		if err != nil {
			return err
		}
		t.Rewound = true
	}
	for _, id := range p.Restored {
		t, err := s.knownTurn(id)
		if err != nil {
			return err
		}
		t.Rewound = false
	}
	s.Session.LastRewind = p.Rewind()
	return nil
}
