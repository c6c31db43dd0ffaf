package server

import (
	"context"
	"encoding/json"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/sessions"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/tasks"
	"github.com/tether/tether/internal/workspace"
)

// Sessions is the session core as the handlers use it: exactly the calls
// they make, so that a handler can be tested against a fake (its errors
// mapped to problem+json, its results to API types) without actors,
// agents or a store. The daemon's is *sessions.Manager.
type Sessions interface {
	// Sessions and their turns.
	Create(ctx context.Context, in sessions.CreateInput) (session.Session, error)
	Resume(ctx context.Context, sessionID string) (sessions.Status, error)
	Status(ctx context.Context, sessionID string) (sessions.Status, error)
	Context(ctx context.Context, sessionID string) (sessions.SessionContext, error)
	Prompt(ctx context.Context, sessionID string, in sessions.PromptInput) (sessions.PromptResult, error)
	Continue(ctx context.Context, sessionID, promptID string) (sessions.ContinueResult, error)
	Withdraw(ctx context.Context, sessionID, promptID string) (session.Turn, error)
	Cancel(ctx context.Context, sessionID string, in sessions.CancelInput) (sessions.CancelResult, error)
	Close(ctx context.Context, sessionID string) (session.Session, error)
	// Forks and rewinds (docs/rewind.md).
	Fork(ctx context.Context, sessionID string, in sessions.ForkInput) (session.Session, error)
	Rewind(ctx context.Context, sessionID string, in sessions.RewindInput) (sessions.RewindOutcome, error)
	UndoRewind(ctx context.Context, sessionID string) (sessions.RewindOutcome, error)
	// UpdateInfo renames or archives the session (nil: left as it is).
	UpdateInfo(ctx context.Context, sessionID string, title *string, archived *bool) (session.Session, error)
	// SetBudget sets the session's budget, whole.
	SetBudget(ctx context.Context, sessionID string, b session.Budget) error
	AnswerPermission(ctx context.Context, sessionID, requestID string, out acp.PermissionOutcome) (session.Permission, error)
	SetMode(ctx context.Context, sessionID, modeID string) (sessions.OptionResult, error)
	SetConfigOption(ctx context.Context, sessionID, optionID string, value json.RawMessage) (sessions.OptionResult, error)

	// The workspace, served where the session's agent runs.
	Workspace(ctx context.Context, sessionID string, req workspace.Request) (workspace.Result, error)
	RunCommand(ctx context.Context, sessionID, command string) (store.Command, error)
	ListCommands(ctx context.Context, sessionID string) ([]store.Command, error)
	ExecutorHosts(ctx context.Context) ([]runtimes.ExecutorHost, error)

	// What /metrics reports of the live sessions.
	Live(ctx context.Context) sessions.LiveStats
	MailboxStats() (longest, peak int)
}

var _ Sessions = (*sessions.Manager)(nil)

// Tasks creates and changes tasks (the daemon's is *tasks.Service).
type Tasks interface {
	Create(ctx context.Context, in tasks.Input) (session.Task, error)
	Update(ctx context.Context, id string, p tasks.Patch) (session.Task, error)
}

var _ Tasks = (*tasks.Service)(nil)
