package acp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// ErrorClass is what an agent's error means for the daemon.
type ErrorClass string

// Error classes (DESIGN.md section 4). Only Unsupported and UnknownSession
// justify falling back to session/new; every other class keeps the saved
// identity.
const (
	ClassNone           ErrorClass = ""
	ClassUnsupported    ErrorClass = "unsupported"
	ClassUnknownSession ErrorClass = "unknown_session"
	ClassAuthRequired   ErrorClass = "auth_required"
	ClassCancelled      ErrorClass = "cancelled"
	ClassTimeout        ErrorClass = "timeout"
	ClassDisconnected   ErrorClass = "disconnected"
	ClassInternal       ErrorClass = "internal"
	// ClassSessionLost: the agent process answers, but the session it
	// served is gone with whatever backed it (claude-agent-acp's own
	// Claude Code process died: "… exited unexpectedly. Please start a new
	// session."). For a prompt it means the same as ClassUnknownSession:
	// this process will not serve the session again, a new one may restore
	// it. For a restore call it is only an error (the identity is kept).
	ClassSessionLost ErrorClass = "session_lost"
)

// sessionLostTexts are how real agents say "the session's backend died"
// in a -32603 (matched case-insensitively in message and data).
var sessionLostTexts = []string{
	"please start a new session",
	"session has ended",
	"process exited unexpectedly",
}

// unknownSessionTexts are how real agents say "that session does not exist"
// when they do not use -32002 (matched case-insensitively in message and data).
var unknownSessionTexts = []string{
	"session not found",
	"unknown session",
	"invalid session identifier",
	"no previous sessions",
	"no conversation found",
	"no rollout found",
	"resource not found",
}

// Classify maps an error from an ACP call to its class.
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout
	}
	var re *sdk.RequestError
	if !errors.As(err, &re) {
		return ClassInternal
	}
	text := strings.ToLower(re.Message + " " + dataText(re.Data))
	switch re.Code {
	case -32601:
		return ClassUnsupported
	case -32002:
		return ClassUnknownSession
	case -32000:
		return ClassAuthRequired
	case -32800:
		if strings.Contains(text, "deadline exceeded") {
			return ClassTimeout
		}
		return ClassCancelled
	}
	if strings.Contains(text, "peer disconnected") {
		return ClassDisconnected
	}
	if re.Code == -32602 || re.Code == -32603 {
		for _, t := range unknownSessionTexts {
			if strings.Contains(text, t) {
				return ClassUnknownSession
			}
		}
		if sessionServiceFailure(re) {
			return ClassUnknownSession
		}
	}
	if re.Code == -32603 {
		for _, t := range sessionLostTexts {
			if strings.Contains(text, t) {
				return ClassSessionLost
			}
		}
	}
	return ClassInternal
}

// sessionServiceFailure reports OpenCode's answer for an unknown session:
// -32603 "Internal error: OpenCode service failure" with data
// {"service":"session"}. OpenCode uses the same service tag for other
// failures of its session service, which name themselves in data.errorName
// (a model it cannot reach is "APIError", message "Cannot connect to API");
// those say nothing about the session being gone, so they do not match. The
// rule is narrow on purpose: a missed unknown session only shows an error
// and keeps the identity, a false one drops the agent's native session.
func sessionServiceFailure(re *sdk.RequestError) bool {
	m, ok := re.Data.(map[string]any)
	if !ok || m["service"] != "session" {
		return false
	}
	if _, named := m["errorName"]; named {
		return false
	}
	return strings.Contains(strings.ToLower(re.Message), "service failure")
}

// Message returns a short human description of an agent error.
func Message(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		if d := dataText(re.Data); d != "" && d != "null" {
			return re.Message + ": " + d
		}
		return re.Message
	}
	return err.Error()
}

// Code returns the JSON-RPC code of an agent error, or 0.
func Code(err error) int {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

func dataText(d any) string {
	if d == nil {
		return ""
	}
	if s, ok := d.(string); ok {
		return s
	}
	b, _ := json.Marshal(d)
	return string(b)
}
