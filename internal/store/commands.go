package store

import (
	"context"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// CommandState is where a command stands.
type CommandState string

// Command states.
const (
	CommandRunning CommandState = "running"
	CommandExited  CommandState = "exited"
	// CommandLost: the daemon lost track of it (see migrations/00016).
	CommandLost CommandState = "lost"
)

// Command is a command run in a session's directory on its executor.
type Command struct {
	SessionID string
	ID        string
	Command   string
	State     CommandState
	// Output is how much of its output the event log holds.
	CommandOutput
	ExitCode  *int
	CreatedAt time.Time
	EndedAt   *time.Time
}

// CommandOutput is how much of a command's output the event log holds.
type CommandOutput struct {
	// OutputOffset is where the output not yet in the event log starts.
	OutputOffset int64
	// OutputBytes are in the log; DroppedBytes are not (known so far,
	// all once the command has exited).
	OutputBytes, DroppedBytes int64
	// Truncated names the limit that stopped the recording, "" while
	// none has: the reason of its command.truncated event
	// (events.TruncatedCommandLimit or TruncatedSessionLimit; the
	// column's CHECK in migrations/00018 allows no other).
	Truncated string
}

type commandRow struct {
	SessionID    string  `gorm:"column:session_id;primaryKey"`
	ID           string  `gorm:"column:id;primaryKey"`
	Command      string  `gorm:"column:command"`
	State        string  `gorm:"column:state"`
	OutputOffset int64   `gorm:"column:output_offset"`
	OutputBytes  int64   `gorm:"column:output_bytes"`
	DroppedBytes int64   `gorm:"column:dropped_bytes"`
	Truncated    string  `gorm:"column:truncated"`
	ExitCode     *int    `gorm:"column:exit_code"`
	CreatedAt    dbTime  `gorm:"column:created_at"`
	EndedAt      *dbTime `gorm:"column:ended_at"`
}

func (commandRow) TableName() string { return "commands" }

func toCommand(r commandRow) Command {
	return Command{SessionID: r.SessionID, ID: r.ID, Command: r.Command, State: CommandState(r.State),
		CommandOutput: CommandOutput{OutputOffset: r.OutputOffset, OutputBytes: r.OutputBytes, DroppedBytes: r.DroppedBytes, Truncated: r.Truncated},
		ExitCode:      r.ExitCode, CreatedAt: r.CreatedAt.t, EndedAt: fromDBTimePtr(r.EndedAt)}
}

// CreateCommand records a command that started.
func (s *Store) CreateCommand(ctx context.Context, c Command) (Command, error) {
	c.State, c.CreatedAt = CommandRunning, now()
	r := commandRow{SessionID: c.SessionID, ID: c.ID, Command: c.Command, State: string(c.State), CreatedAt: toDBTime(c.CreatedAt)}
	if err := s.db.WithContext(ctx).Create(&r).Error; err != nil {
		return Command{}, internal(err, "create command")
	}
	return c, nil
}

// SetCommandOutput records how much of the command's output the event log
// holds now (never an offset before the one recorded).
func (s *Store) SetCommandOutput(ctx context.Context, sessionID, id string, o CommandOutput) error {
	return updateRow(s.db.WithContext(ctx), "set command output", func() error { return commandNotFound(id) },
		`UPDATE commands SET output_offset = ?, output_bytes = ?, dropped_bytes = ?, truncated = ? WHERE session_id = ? AND id = ? AND output_offset <= ?`,
		o.OutputOffset, o.OutputBytes, o.DroppedBytes, o.Truncated, sessionID, id, o.OutputOffset)
}

// SessionCommandOutput is how many bytes of command output the event log
// holds for the session, all its commands together.
func (s *Store) SessionCommandOutput(ctx context.Context, sessionID string) (int64, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT CAST(COALESCE(SUM(output_bytes), 0) AS BIGINT) FROM commands WHERE session_id = ?`, sessionID).Scan(&n).Error; err != nil {
		return 0, internal(err, "session command output")
	}
	return n, nil
}

// EndCommand records how a command ended (exit code nil when lost) and
// how much of its output the event log holds and left out in all.
func (s *Store) EndCommand(ctx context.Context, sessionID, id string, state CommandState, exitCode *int, outputBytes, droppedBytes int64) error {
	return updateRow(s.db.WithContext(ctx), "end command", func() error { return commandNotFound(id) },
		`UPDATE commands SET state = ?, exit_code = ?, ended_at = ?, output_bytes = ?, dropped_bytes = ? WHERE session_id = ? AND id = ?`,
		string(state), exitCode, toDBTime(now()), outputBytes, droppedBytes, sessionID, id)
}

// GetCommand returns one command or errcode.CommandNotFound.
func (s *Store) GetCommand(ctx context.Context, sessionID, id string) (Command, error) {
	var r commandRow
	if err := s.db.WithContext(ctx).Where("session_id = ? AND id = ?", sessionID, id).Take(&r).Error; err != nil {
		if isNotFound(err) {
			return Command{}, commandNotFound(id)
		}
		return Command{}, internal(err, "get command")
	}
	return toCommand(r), nil
}

// ListCommands returns a session's commands, oldest first.
func (s *Store) ListCommands(ctx context.Context, sessionID string) ([]Command, error) {
	var rows []commandRow
	if err := s.db.WithContext(ctx).Where("session_id = ?", sessionID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, internal(err, "list commands")
	}
	out := make([]Command, 0, len(rows))
	for _, r := range rows {
		out = append(out, toCommand(r))
	}
	return out, nil
}

// ListRunningCommands returns every command still running, of any session.
func (s *Store) ListRunningCommands(ctx context.Context) ([]Command, error) {
	var rows []commandRow
	if err := s.db.WithContext(ctx).Where("state = ?", string(CommandRunning)).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, internal(err, "list running commands")
	}
	out := make([]Command, 0, len(rows))
	for _, r := range rows {
		out = append(out, toCommand(r))
	}
	return out, nil
}

func commandNotFound(id string) error {
	return errcode.New(errcode.CommandNotFound, "no command %q in this session", id).With("commandId", id)
}
