package runtimes

import (
	"errors"
	"fmt"
	"os"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
)

// StartFailure wraps an error of the agent's start or restore with its
// stable code: executor_unavailable or executor_lost when its executor
// host is to blame, agent_start_failed, or agent_auth_required when the agent
// asks for credentials (ACP -32000). Then the message ends with what to do
// (from the auth methods the agent announced) and the error carries those
// methods, for the problem body. conn is nil when the handshake itself
// failed (authenticate included); command is the agent's, for the hints.
func StartFailure(err error, conn Agent, command string, format string, args ...any) *errcode.Error {
	if code := errcode.CodeOf(err); code == errcode.ExecutorUnavailable || code == errcode.ExecutorLost || code == errcode.SandboxUnavailable {
		// The executor host failed, not the agent: the session's error
		// code says so (the message, why the host could not be reached).
		return errcode.Wrap(code, err, format, args...)
	}
	if acp.Classify(err) != acp.ClassAuthRequired {
		return errcode.Wrap(errcode.AgentStartFailed, err, format, args...)
	}
	var methods []acp.AuthMethod
	var ae *acp.AuthenticateError
	switch {
	case conn != nil:
		methods = conn.Capabilities().AuthMethods
	case errors.As(err, &ae):
		methods = ae.Capabilities.AuthMethods
	}
	e := errcode.Wrap(errcode.AgentAuthRequired, err, "%s", acp.AuthRequiredMessage(fmt.Sprintf(format, args...), methods, command))
	if len(methods) == 0 {
		return e
	}
	list := make([]map[string]any, 0, len(methods))
	for _, m := range methods {
		list = append(list, map[string]any{"id": m.ID, "name": m.Name, "hint": m.Hint(command)})
	}
	return e.With("authMethods", list)
}

// CheckDir refuses to start an agent in a directory that is gone; the
// session stays resumable for when it is back.
func CheckDir(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return errcode.New(errcode.WorkingDirMissing, "working directory %s is missing", dir).With("retryAfter", 10)
	}
	return nil
}
