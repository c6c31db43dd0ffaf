package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether/tether/internal/errcode"
)

// statusOf is the one table from domain error codes to HTTP statuses.
var statusOf = map[errcode.Code]int{
	errcode.InvalidRequest:           http.StatusBadRequest,
	errcode.ValidationFailed:         http.StatusBadRequest,
	errcode.PromptContentUnsupported: http.StatusBadRequest,
	errcode.MalformedJSON:            http.StatusBadRequest,
	errcode.InvalidCwd:               http.StatusBadRequest,
	errcode.CwdRefused:               http.StatusBadRequest,
	errcode.InvalidPermissionOpt:     http.StatusBadRequest,
	errcode.InvalidCursor:            http.StatusBadRequest,
	errcode.UnknownMode:              http.StatusBadRequest,
	errcode.UnknownConfigOption:      http.StatusBadRequest,
	errcode.InvalidConfigValue:       http.StatusBadRequest,
	errcode.TooManySubscribers:       http.StatusTooManyRequests,
	// The workspace API (internal/workspace).
	errcode.WorkspacePathInvalid:        http.StatusBadRequest,
	errcode.WorkspacePathOutside:        http.StatusForbidden,
	errcode.WorkspacePathNotFound:       http.StatusNotFound,
	errcode.WorkspaceNotDirectory:       http.StatusBadRequest,
	errcode.WorkspaceNotFile:            http.StatusBadRequest,
	errcode.WorkspaceNotRepository:      http.StatusConflict,
	errcode.WorkspaceRevisionNotFound:   http.StatusNotFound,
	errcode.WorkspaceCheckpointNotFound: http.StatusNotFound,
	errcode.WorkspaceWorktreeInvalid:    http.StatusConflict,
	errcode.WorkspaceRootChanged:        http.StatusConflict,
	errcode.WorkspaceTargetNotEmpty:     http.StatusConflict,
	errcode.RewindRunning:               http.StatusConflict,
	errcode.RewindNotUndoable:           http.StatusConflict,
	errcode.RewindInProgress:            http.StatusConflict,
	errcode.BudgetExceeded:              http.StatusConflict,
	errcode.WorkspaceRepositoryRefused:  http.StatusForbidden,
	errcode.TerminalDisabled:            http.StatusForbidden,
	errcode.TerminalNotFound:            http.StatusNotFound,
	errcode.TerminalExited:              http.StatusConflict,
	errcode.TerminalLimitReached:        http.StatusTooManyRequests,
	errcode.CommandNotFound:             http.StatusNotFound,
	errcode.WorkspaceGitUnavailable:     http.StatusNotImplemented,
	errcode.WorkspaceUnsupported:        http.StatusNotImplemented,
	errcode.Unauthorized:                http.StatusUnauthorized,
	errcode.HostNotAllowed:              http.StatusForbidden,
	errcode.RequestTimeout:              http.StatusRequestTimeout,
	errcode.NotFound:                    http.StatusNotFound,
	errcode.RouteNotFound:               http.StatusNotFound,
	errcode.TaskNotFound:                http.StatusNotFound,
	errcode.SessionNotFound:             http.StatusNotFound,
	errcode.WebhookNotFound:             http.StatusNotFound,
	errcode.TurnNotFound:                http.StatusNotFound,
	errcode.PermissionNotFound:          http.StatusNotFound,
	errcode.AgentProfileNotFound:        http.StatusNotFound,
	errcode.MethodNotAllowed:            http.StatusMethodNotAllowed,
	errcode.AgentUnavailable:            http.StatusConflict,
	errcode.SandboxUnavailable:          http.StatusConflict,
	// The profile lacks what its agent needs (POST /session refuses,
	// POST /resume fails): like an unavailable agent, the user acts first
	// (sets a key in the profile, logs the agent in), then retries.
	errcode.AgentAuthRequired:    http.StatusConflict,
	errcode.WorkingDirMissing:    http.StatusConflict,
	errcode.InvalidState:         http.StatusConflict,
	errcode.SessionTerminal:      http.StatusConflict,
	errcode.TurnActive:           http.StatusConflict,
	errcode.TurnQueued:           http.StatusConflict,
	errcode.TurnNotQueued:        http.StatusConflict,
	errcode.PermissionPending:    http.StatusConflict,
	errcode.SessionClosing:       http.StatusConflict,
	errcode.NothingToContinue:    http.StatusConflict,
	errcode.HistoryDegraded:      http.StatusConflict,
	errcode.PromptIDConflict:     http.StatusConflict,
	errcode.PermissionResolved:   http.StatusConflict,
	errcode.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
	errcode.UnsupportedMediaType: http.StatusUnsupportedMediaType,
	errcode.PromptQueueFull:      http.StatusServiceUnavailable,
	errcode.AgentLimitReached:    http.StatusServiceUnavailable,
	errcode.ServiceShuttingDown:  http.StatusServiceUnavailable,
	errcode.SessionOverloaded:    http.StatusServiceUnavailable,
	// The session's owner node cannot be reached, or this node just lost
	// it: retry (the request reaches the owner).
	errcode.SessionOwnedElsewhere: http.StatusServiceUnavailable,
	errcode.SessionLeaseLost:      http.StatusServiceUnavailable,
	errcode.NotReady:              http.StatusServiceUnavailable,
	errcode.OutboxFull:            http.StatusServiceUnavailable, // raised by an executor host's outbox
	errcode.TooManyConnections:    http.StatusServiceUnavailable, // written by internal/connlimit
	errcode.Timeout:               http.StatusGatewayTimeout,
	errcode.RequestCancelled:      499,
	errcode.AgentStartFailed:      http.StatusBadGateway,
	errcode.AgentError:            http.StatusBadGateway,
	errcode.ResumeFailed:          http.StatusBadGateway,
	// Raised by the host protocol (internal/hostproto): the daemon's
	// upstream, an executor host, refused it or broke the protocol.
	errcode.HostProtocolMismatch:    http.StatusBadGateway,
	errcode.HostUnauthorized:        http.StatusBadGateway,
	errcode.HostCertificateRejected: http.StatusBadGateway,
	errcode.HostProtocolError:       http.StatusBadGateway,
	errcode.HostFrameTooLarge:       http.StatusBadGateway,
	errcode.HostSessionUnknown:      http.StatusBadGateway,
	errcode.HostSessionFenced:       http.StatusConflict, // another node owns the session now
	errcode.HostOutboxDamaged:       http.StatusBadGateway,
	errcode.ExecutorUnavailable:     http.StatusServiceUnavailable,
	errcode.ExecutorLost:            http.StatusBadGateway,
	errcode.ExecutorNotFound:        http.StatusBadRequest,
	errcode.DatabaseTooNew:          http.StatusInternalServerError,
	errcode.Internal:                http.StatusInternalServerError,
	errcode.StoreWriteFailed:        http.StatusInternalServerError,
	errcode.DatabaseUnavailable:     http.StatusServiceUnavailable,

	// Stream tickets (server/tickets.go).
	errcode.StreamTicketInvalid:     http.StatusUnauthorized,
	errcode.StreamTicketExpired:     http.StatusUnauthorized,
	errcode.StreamTicketWrongStream: http.StatusUnauthorized,
	errcode.StreamTicketInUse:       http.StatusUnauthorized,
	errcode.TooManyStreamTickets:    http.StatusTooManyRequests,
}

// problem is an RFC 9457 body with the daemon's stable code.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
}

// writeProblem renders err as application/problem+json. Unknown errors are
// logged and reported as a generic 500 without leaking their text.
func writeProblem(c echo.Context, err error, log *slog.Logger) {
	if c.Response().Committed {
		return
	}
	writeProblemHTTP(c.Response(), c.Request(), err, log)
}

// writeProblemHTTP is writeProblem on a plain response writer (a reverse
// proxy's error handler has no echo context).
func writeProblemHTTP(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	e := toDomainError(err)
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	detail := e.Message
	if status >= 500 && e.Code == errcode.Internal {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		detail = "internal error; see the daemon log"
	}
	body := map[string]any{}
	for k, v := range e.Details {
		body[k] = v
	}
	title := http.StatusText(status)
	if title == "" {
		title = "Client Closed Request"
	}
	p := problem{Type: "about:blank", Title: title, Status: status, Detail: detail, Code: string(e.Code)}
	body["type"], body["title"], body["status"], body["code"] = p.Type, p.Title, p.Status, p.Code
	if p.Detail != "" {
		body["detail"] = p.Detail
	}
	if ra, ok := e.Details["retryAfter"]; ok {
		if n, ok := ra.(int); ok {
			w.Header().Set("Retry-After", itoa(n))
		}
	}
	w.Header().Set(echo.HeaderContentType, "application/problem+json")
	w.WriteHeader(status)
	_ = jsonEncode(w, body)
}

// toDomainError classifies errors raised outside the core: echo's own
// (routing, body limit, binding) and the request validator's.
func toDomainError(err error) *errcode.Error {
	var de *errcode.Error
	if errors.As(err, &de) {
		return de
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.Wrap(errcode.Timeout, err, "the operation timed out")
	}
	if errors.Is(err, context.Canceled) {
		// The client went away (or the daemon is stopping); nobody reads this.
		return errcode.Wrap(errcode.RequestCancelled, err, "request was cancelled")
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := httpErrorMessage(he)
		switch he.Code {
		case http.StatusNotFound:
			return errcode.New(errcode.RouteNotFound, "no such route")
		case http.StatusMethodNotAllowed:
			return errcode.New(errcode.MethodNotAllowed, "method not allowed on this route")
		case http.StatusRequestEntityTooLarge:
			return errcode.New(errcode.PayloadTooLarge, "request body is too large")
		case http.StatusUnsupportedMediaType:
			return errcode.New(errcode.UnsupportedMediaType, "%s", msg)
		case http.StatusUnauthorized:
			return errcode.New(errcode.Unauthorized, "%s", msg)
		case http.StatusBadRequest:
			low := strings.ToLower(msg)
			switch {
			case strings.Contains(low, "content-type") || strings.Contains(low, "content type"):
				return errcode.New(errcode.UnsupportedMediaType, "%s", msg)
			case strings.Contains(low, "failed to decode") || strings.Contains(low, "syntax error") ||
				strings.Contains(low, "unexpected eof") || strings.Contains(low, "unmarshal"):
				return errcode.New(errcode.MalformedJSON, "request body is not valid JSON: %s", msg)
			}
			return errcode.New(errcode.ValidationFailed, "%s", msg)
		}
		if he.Code >= 400 && he.Code < 500 {
			return errcode.New(errcode.InvalidRequest, "%s", msg)
		}
	}
	return errcode.Wrap(errcode.Internal, err, "internal error")
}

func httpErrorMessage(he *echo.HTTPError) string {
	if s, ok := he.Message.(string); ok {
		return s
	}
	if he.Internal != nil {
		return he.Internal.Error()
	}
	return http.StatusText(he.Code)
}
