package session_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/internal/session"
)

// fuzzBytes hands out the fuzzer's bytes; once they run out it yields
// zeros, so every input decodes to some transcript.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() byte {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return f.b[f.i-1]
}

func (f *fuzzBytes) bit() bool { return f.next()&1 == 1 }

func pick[T any](f *fuzzBytes, from []T) T { return from[int(f.next())%len(from)] }

var (
	// Weighted towards turns with an outcome, interrupted ones above all, so
	// continuable transcripts are common enough to exercise.
	fuzzTurnStates = []session.TurnState{session.TurnQueued, session.TurnRunning, session.TurnCompleted, session.TurnCompleted,
		session.TurnCancelled, session.TurnFailed, session.TurnInterrupted, session.TurnInterrupted, session.TurnInterrupted,
		session.TurnInterrupted, session.TurnCompleted}
	fuzzTurnKinds  = []session.TurnKind{session.TurnInitial, session.TurnPrompt, session.TurnContinue}
	fuzzReasons    = []string{"", "agent_exited", "daemon_restart", "agent_crashed"}
	fuzzRoles      = []session.MessageRole{session.RoleUser, session.RoleAgent, session.RoleThought, session.RoleSystem}
	fuzzToolStatus = []session.ToolCallStatus{session.ToolPending, session.ToolInProgress, session.ToolCompleted, session.ToolFailed}
	fuzzPermStates = []session.PermissionState{session.PermissionPending, session.PermissionSelected,
		session.PermissionCancelled, session.PermissionExpired}
	fuzzLiveStates = []session.SessionState{session.SessionCreated, session.SessionStarting, session.SessionRunning,
		session.SessionWaitingForInput}
	fuzzSessStates = append(append([]session.SessionState(nil), fuzzLiveStates...),
		session.SessionCompleted, session.SessionFailed, session.SessionCancelled)
	fuzzTitles = []string{"Run make", "Edit main.go", "Read go.mod", "", "Fetch"}
	fuzzKinds  = []string{"execute", "edit", "read", "", "fetch"}
	// Turn prompt ids are never empty (the store assigns them).
	fuzzTurnIDs = []string{"p1", "p2", "p3", "p4", "p5", "p6"}
)

// decodeInput turns fuzz bytes into a transcript and live state. Turn seqs
// are consecutive and prompt ids distinct unless the bytes ask for a
// perturbation (gap, duplicate, zero seq; reused prompt id); output mostly
// belongs to existing turns but may carry no prompt id or an unknown one.
// Blockers (closing, terminal, no agent, lost context) are each rare, so
// continuable transcripts come up often.
func decodeInput(data []byte) session.PlanInput {
	f := &fuzzBytes{b: data}
	var in session.PlanInput
	flags := f.next()
	in.Closing = flags&0x07 == 0x07
	in.AgentAvailable = flags&0x18 != 0x18
	in.ContextLost = flags&0xE0 == 0xE0
	v := f.next()
	in.QueueHeld = v&4 == 4
	if v&3 == 3 {
		in.State = pick(f, fuzzSessStates)
	} else {
		in.State = pick(f, fuzzLiveStates)
	}

	nTurns := int(f.next() % 7)
	for i := 0; i < nTurns; i++ {
		t := session.Turn{
			SessionID: "s1",
			PromptID:  fuzzTurnIDs[i%len(fuzzTurnIDs)],
			Seq:       int64(i + 1),
			Kind:      pick(f, fuzzTurnKinds),
			State:     pick(f, fuzzTurnStates),
		}
		ctl := f.next()
		t.CancelRequested = ctl&0x03 == 0x03
		if ctl&0x1C == 0x1C { // perturb the seq: gaps, duplicates, zero
			t.Seq = int64(ctl>>6) + int64(i)
		}
		if ctl&0x60 == 0x60 { // reuse another turn's prompt id
			t.PromptID = pick(f, fuzzTurnIDs)
		}
		t.InterruptReason = pick(f, fuzzReasons)
		in.Turns = append(in.Turns, t)
	}
	outputID := func() string {
		v := f.next()
		switch {
		case v%16 == 0:
			return ""
		case v%16 == 1:
			return "ghost"
		case nTurns == 0:
			return pick(f, fuzzTurnIDs)
		}
		return in.Turns[int(v/16)%nTurns].PromptID
	}
	nMsgs := int(f.next() % 10)
	for i := 0; i < nMsgs; i++ {
		in.Messages = append(in.Messages, session.Message{ID: int64(i + 1), SessionID: "s1",
			PromptID: outputID(), Role: pick(f, fuzzRoles), Text: "m", CreatedAt: at(i)})
	}
	nCalls := int(f.next() % 8)
	for i := 0; i < nCalls; i++ {
		in.ToolCalls = append(in.ToolCalls, session.ToolCall{SessionID: "s1",
			ToolCallID: "tc" + string(rune('a'+i)), PromptID: outputID(),
			Title: pick(f, fuzzTitles), Kind: pick(f, fuzzKinds), Status: pick(f, fuzzToolStatus),
			Interrupted: f.bit(), CreatedAt: at(i), UpdatedAt: at(i + 1)})
	}
	nPerms := int(f.next() % 3)
	for i := 0; i < nPerms; i++ {
		st := session.PermissionSelected
		if v := f.next(); v&3 == 3 {
			st = pick(f, fuzzPermStates)
		}
		in.Permissions = append(in.Permissions, session.Permission{ID: "perm" + string(rune('a'+i)), SessionID: "s1",
			PromptID: outputID(), State: st})
	}
	return in
}

func cloneInput(in session.PlanInput) session.PlanInput {
	out := in
	out.Turns = append([]session.Turn(nil), in.Turns...)
	out.Messages = append([]session.Message(nil), in.Messages...)
	out.ToolCalls = append([]session.ToolCall(nil), in.ToolCalls...)
	out.Permissions = append([]session.Permission(nil), in.Permissions...)
	return out
}

func FuzzPlan(f *testing.F) {
	// Seeds, each checked to decode to the transcript its comment names.
	f.Add([]byte{})  // no turns: clean
	f.Add([]byte{0}) // all zeros: idle, agent available, no turns
	// continuable interrupted_turn with two dangling tool calls
	f.Add([]byte{0x94, 0x45, 0x7b, 0x94, 0x18, 0xa1, 0xb4, 0x77, 0x8c, 0xbd, 0x8c, 0x10, 0x44, 0xed, 0xf5, 0x7a, 0xef, 0xf4, 0xe3, 0x24, 0x95, 0x61, 0x34, 0xa4, 0xbf, 0x4, 0x37, 0xe1, 0x40, 0x64, 0xe, 0x70, 0x46})
	// continuable interrupted_prompt after earlier turns
	f.Add([]byte{0x9, 0xc4, 0x5b, 0x3a, 0x2, 0xf5, 0x12, 0xa4, 0xef, 0x95, 0x56, 0x66, 0x14, 0x29, 0x8d, 0x46, 0xd4, 0xf0, 0x65, 0xca, 0x68, 0x34, 0xc4, 0x13, 0x65, 0x8d, 0x8e, 0x71, 0x8a, 0xa1, 0x66, 0x41, 0x39, 0x87})
	// interrupted_turn blocked by a queued turn
	f.Add([]byte{0x7c, 0x80, 0x4f, 0xab, 0x26, 0xa3, 0x9, 0x45, 0xb8, 0xa1, 0x8a, 0xdc, 0x8b, 0x16, 0x76, 0xa3, 0xf9, 0xf3, 0x33, 0x28, 0x20, 0xb3, 0x46, 0x28, 0x6c, 0xe2, 0x4e, 0x2a, 0xca, 0x91, 0x72, 0xc2, 0xf6, 0x91, 0x48, 0x1d, 0x42, 0xb8, 0xa9, 0xfc, 0xe2})
	// transcript gap after an interrupted turn: degraded_history
	f.Add([]byte{0x7e, 0xcc, 0x32, 0x6a, 0xb5, 0xf9, 0x48, 0x1c, 0x97, 0x73, 0xed, 0x9a, 0x51, 0x13, 0xdd, 0xd2, 0x46, 0x35, 0x8c, 0x19, 0xcb, 0xaa, 0x3d, 0x22, 0x5, 0x9b, 0xe, 0xa2, 0x97, 0xd4, 0xa5, 0x8f, 0xa, 0x16, 0xca})
	// interrupted last turn the user had cancelled: clean
	f.Add([]byte{0x7e, 0x9c, 0x30, 0x48, 0xc2, 0x8b, 0x19, 0x17, 0xce, 0x14, 0x8f, 0x58, 0xa2, 0xc2, 0xa4, 0x6a, 0x87, 0x21, 0x80, 0x17, 0xbe, 0x3f, 0x6b, 0xef, 0xf6, 0x24, 0x74, 0x12, 0xbe, 0x37, 0xd, 0x4a, 0xc8, 0x9a, 0x7, 0xb1, 0x94, 0xfe, 0x90, 0x78, 0xde, 0x88, 0x13})
	// every byte maxed: closing, no agent, context lost, terminal
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})

	continuable := map[session.RecoveryKind]bool{session.RecoveryInterruptedPrompt: true, session.RecoveryInterruptedTurn: true}
	knownKinds := map[session.RecoveryKind]bool{session.RecoveryClean: true, session.RecoveryInterruptedPrompt: true,
		session.RecoveryInterruptedTurn: true, session.RecoveryDegradedHistory: true}
	knownReasons := map[string]bool{"": true, session.ReasonTurnActive: true, session.ReasonTurnQueued: true,
		session.ReasonPermissionPending: true, session.ReasonSessionClosing: true, session.ReasonSessionTerminal: true,
		session.ReasonAgentUnavailable: true, session.ReasonNothingToContinue: true, session.ReasonHistoryDegraded: true}

	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeInput(data)
		orig := cloneInput(in)
		s := session.Plan(in) // must not panic

		if !reflect.DeepEqual(in, orig) {
			t.Fatalf("Plan mutated its input")
		}
		if again := session.Plan(cloneInput(orig)); !reflect.DeepEqual(s, again) {
			t.Fatalf("Plan is not deterministic:\n%+v\n%+v", s, again)
		}
		if s.DanglingToolCalls == nil {
			t.Fatalf("danglingToolCalls is nil")
		}
		if strings.TrimSpace(s.Notice) == "" {
			t.Fatalf("notice is empty: %+v", s)
		}
		if !knownKinds[s.Kind] {
			t.Fatalf("unknown kind %q", s.Kind)
		}
		if !knownReasons[s.Reason] {
			t.Fatalf("unknown reason %q", s.Reason)
		}
		if s.CanContinue != (s.Reason == "") {
			t.Fatalf("canContinue = %v with reason %q", s.CanContinue, s.Reason)
		}
		if s.Kind == session.RecoveryDegradedHistory && s.CanContinue {
			t.Fatalf("degraded_history can continue: %+v", s)
		}
		if in.ContextLost && s.Kind != session.RecoveryDegradedHistory {
			t.Fatalf("context lost but kind %q", s.Kind)
		}

		running, queued, pending := false, false, false
		for _, tr := range in.Turns {
			running = running || tr.State == session.TurnRunning
			queued = queued || tr.State == session.TurnQueued
		}
		for _, p := range in.Permissions {
			pending = pending || p.State == session.PermissionPending
		}
		if s.CanContinue {
			switch {
			case !continuable[s.Kind]:
				t.Fatalf("canContinue with kind %q", s.Kind)
			case running:
				t.Fatalf("canContinue while a turn is running")
			case queued && !in.QueueHeld:
				t.Fatalf("canContinue while a turn is queued and not held")
			case pending:
				t.Fatalf("canContinue while a permission is pending")
			case in.State.Terminal():
				t.Fatalf("canContinue in terminal state %s", in.State)
			case in.Closing:
				t.Fatalf("canContinue while closing")
			case !in.AgentAvailable:
				t.Fatalf("canContinue without an agent")
			}
		}

		// The turn a continuation would pick up: the last non-queued, not
		// withdrawn turn by seq (the fuzzer sets no start times).
		var last *session.Turn
		for i := range in.Turns {
			tr := &in.Turns[i]
			if tr.State == session.TurnQueued || (tr.State == session.TurnCancelled && tr.StopReason == session.Withdrawn) {
				continue
			}
			if last == nil || tr.Seq >= last.Seq {
				last = tr
			}
		}
		if continuable[s.Kind] {
			if s.PromptID == "" {
				t.Fatalf("kind %q without promptId", s.Kind)
			}
			if last == nil || last.PromptID != s.PromptID || last.State != session.TurnInterrupted || last.CancelRequested {
				t.Fatalf("promptId %q does not name the last turn, an uncancelled interrupted one (last %+v)", s.PromptID, last)
			}
			if s.InterruptReason != last.InterruptReason {
				t.Fatalf("interruptReason %q, turn says %q", s.InterruptReason, last.InterruptReason)
			}
			// interrupted_turn exactly when the agent said, thought or did anything for the turn.
			produced := false
			for _, m := range in.Messages {
				produced = produced || (m.PromptID == s.PromptID && (m.Role == session.RoleAgent || m.Role == session.RoleThought))
			}
			for _, c := range in.ToolCalls {
				produced = produced || c.PromptID == s.PromptID
			}
			if produced != (s.Kind == session.RecoveryInterruptedTurn) {
				t.Fatalf("kind %q but agent output for %s: %v", s.Kind, s.PromptID, produced)
			}
		}
		if s.Kind == session.RecoveryClean && (s.PromptID != "" || len(s.DanglingToolCalls) != 0) {
			t.Fatalf("clean summary names a turn or dangling calls: %+v", s)
		}
		if s.Kind == session.RecoveryInterruptedPrompt && len(s.DanglingToolCalls) != 0 {
			t.Fatalf("interrupted_prompt with dangling tool calls: %+v", s)
		}
		if s.PromptID == "" && len(s.DanglingToolCalls) != 0 {
			t.Fatalf("dangling tool calls without a turn: %+v", s)
		}

		// Dangling calls are exactly the unfinished or interrupted calls of
		// the turn, in order; an interrupted call completed later (late
		// output) finished.
		if s.PromptID != "" {
			var want []string
			for _, c := range in.ToolCalls {
				if c.PromptID == s.PromptID && ((c.Interrupted && c.Status != session.ToolCompleted) || c.Status == session.ToolPending || c.Status == session.ToolInProgress) {
					want = append(want, c.ToolCallID)
				}
			}
			var got []string
			for _, d := range s.DanglingToolCalls {
				got = append(got, d.ID)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("dangling %v, want %v", got, want)
			}
		}
		if s.Kind == session.RecoveryInterruptedTurn {
			for _, d := range s.DanglingToolCalls {
				if !strings.Contains(s.Notice, d.Title) {
					t.Fatalf("notice %q does not name %q", s.Notice, d.Title)
				}
			}
		}

		// With distinct seqs the caller's turn order does not matter.
		seen := map[int64]bool{}
		distinct := true
		for _, tr := range in.Turns {
			distinct = distinct && !seen[tr.Seq]
			seen[tr.Seq] = true
		}
		if distinct && len(in.Turns) > 1 {
			rev := cloneInput(orig)
			for i, j := 0, len(rev.Turns)-1; i < j; i, j = i+1, j-1 {
				rev.Turns[i], rev.Turns[j] = rev.Turns[j], rev.Turns[i]
			}
			if r := session.Plan(rev); !reflect.DeepEqual(r, s) {
				t.Fatalf("turn order changed the plan:\n%+v\n%+v", s, r)
			}
		}

		p := session.ContinuationPrompt(s, session.PartialReply(in, s.PromptID))
		for _, d := range s.DanglingToolCalls {
			if !strings.Contains(p, d.ID) {
				t.Fatalf("continuation prompt does not name %s", d.ID)
			}
		}
		if strings.Contains(strings.ToLower(p), "replay") {
			t.Fatalf("continuation prompt mentions replay:\n%s", p)
		}
	})
}
