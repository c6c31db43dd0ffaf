package sessions

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// This file owns a session's modes and config options: what the agent
// announced (session/new, load and resume responses, current_mode_update,
// config_option_update), what the user chose through the API, and giving
// the agent that choice again after every start and restore.

// OptionResult is the outcome of setting a mode or a config option.
type OptionResult struct {
	// Applied is true when the running agent took the value now; false
	// when no agent runs: the choice is stored and applied after the next
	// start or restore.
	Applied bool
	// Context is the session's options after the change.
	Context SessionContext
}

// choices decodes the session's stored config choices.
func (a *actor) choices() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	_ = json.Unmarshal(a.sess.ConfigChoices, &out)
	return out
}

// adoptOptions takes what an agent announced when its session opened.
func (a *actor) adoptOptions(o acp.SessionOptions) {
	if o.Modes != nil {
		a.modes = o.Modes
		if s, ok := acp.ParseModes(o.Modes); ok && s.CurrentModeID != "" {
			a.mode, _ = json.Marshal(s.CurrentModeID)
		}
	}
	if o.ConfigOptions != nil {
		a.configOptions = o.ConfigOptions
	}
	a.emitOptions()
}

// emitOptions announces the session's options as they now stand, so a
// stream sees modes, config options and commands change without polling.
func (a *actor) emitOptions() {
	changed := a.draft("", &session.SessionOptionsChangedData{CurrentMode: a.mode,
		AvailableModes: acp.AvailableModes(a.modes), ConfigOptions: a.configOptions, AvailableCommands: a.commands})
	a.emit(changed)
}

// ready reports whether the agent can take an ACP call now.
func (a *actor) ready() bool {
	return a.conn != nil && !a.starting && a.acpID != "" && !a.agentLeaving()
}

// agentLeaving reports whether the actor's agent is on its way out: its
// host reported it ended, or it is being stopped for ignoring a cancel
// (a.deaf). Its exit, not a link or a start, says what becomes of it.
func (a *actor) agentLeaving() bool { return endedOnHost(a.conn) || a.conn == a.deaf }

// optionChange is one mode or config option change, in the steps
// changeOption runs: decide (check, and apply now or store) on the actor,
// send off it (nothing on the actor waits for the agent), adopt the
// agent's answer on it again.
type optionChange struct {
	cmd   input
	send  func(ctx context.Context, conn runtimes.Agent, acpID string) (json.RawMessage, error)
	adopt func(a *actor, answer json.RawMessage)
	store func(a *actor) *events.Pending
}

// changeOption applies ch now when the agent runs (stored only once the
// agent took it), else stores it for the next start.
func (m *Manager) changeOption(ctx context.Context, sessionID string, ch optionChange) (OptionResult, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return OptionResult{}, err
	}
	type step struct {
		conn    runtimes.Agent
		acpID   string
		pending *events.Pending
	}
	c, err := mailbox.Call(ctx, a.mb, func() (step, error) {
		d := decide(a.view(), ch.cmd)
		if d.Refusal != nil {
			return step{}, d.Refusal
		}
		j := &job{option: ch.store}
		err := a.perform(d, j)
		return step{conn: j.conn, acpID: j.acpID, pending: j.pending}, err
	})
	if err != nil {
		return OptionResult{}, err
	}
	applied := c.conn != nil
	if applied {
		answer, err := ch.send(ctx, c.conn, c.acpID)
		if err != nil {
			return OptionResult{}, err
		}
		if c.pending, err = mailbox.Call(ctx, a.mb, func() (*events.Pending, error) {
			ch.adopt(a, answer)
			a.emitOptions()
			return ch.store(a), nil
		}); err != nil {
			return OptionResult{}, err
		}
	}
	return m.optionResult(ctx, sessionID, applied, c.pending)
}

// SetMode sets the session's mode: now on the running agent
// (session/set_mode), and stored, so every later start and restore gives
// the agent the same mode. An agent that announced its modes is held to
// them (unknown_mode); a stopped session stores the choice unchecked when
// no agent has told the daemon its modes yet.
func (m *Manager) SetMode(ctx context.Context, sessionID, modeID string) (OptionResult, error) {
	return m.changeOption(ctx, sessionID, optionChange{
		cmd: setModeCmd{ModeID: modeID},
		send: func(ctx context.Context, conn runtimes.Agent, acpID string) (json.RawMessage, error) {
			err := m.traced(ctx, "acp.session.set_mode", func(ctx context.Context) error { return conn.SetMode(ctx, acpID, modeID) })
			if err != nil {
				return nil, errcode.Wrap(errcode.AgentError, err, "the agent refused mode %q: %s", modeID, acp.Message(err))
			}
			return nil, nil
		},
		adopt: func(a *actor, _ json.RawMessage) {
			a.mode, _ = json.Marshal(modeID)
			a.modes = acp.WithCurrentMode(a.modes, modeID)
		},
		store: func(a *actor) *events.Pending { return a.storeMode(modeID) },
	})
}

// SetConfigOption sets one config option (session/set_config_option) to
// value, a JSON string (a value id) or boolean, like SetMode: applied now
// when the agent runs, stored and reapplied after every start and restore.
func (m *Manager) SetConfigOption(ctx context.Context, sessionID, optionID string, value json.RawMessage) (OptionResult, error) {
	var scalar any
	_ = json.Unmarshal(value, &scalar)
	switch scalar.(type) {
	case string, bool:
	default:
		return OptionResult{}, errcode.New(errcode.InvalidConfigValue, "value must be a string or a boolean").With("optionId", optionID)
	}
	return m.changeOption(ctx, sessionID, optionChange{
		cmd: setConfigCmd{OptionID: optionID, Value: value},
		send: func(ctx context.Context, conn runtimes.Agent, acpID string) (json.RawMessage, error) {
			var options json.RawMessage
			err := m.traced(ctx, "acp.session.set_config_option", func(ctx context.Context) error {
				var err error
				options, err = conn.SetConfigOption(ctx, acpID, optionID, value)
				return err
			})
			if err != nil {
				return nil, errcode.Wrap(errcode.AgentError, err, "the agent refused %s for config option %q: %s", value, optionID, acp.Message(err))
			}
			return options, nil
		},
		adopt: func(a *actor, options json.RawMessage) { a.configOptions = options },
		store: func(a *actor) *events.Pending { return a.storeConfig(optionID, value) },
	})
}

// storeMode persists the mode choice.
func (a *actor) storeMode(modeID string) *events.Pending {
	a.sess.ModeChoice = modeID
	return a.emit(a.choicesDraft())
}

// storeConfig persists one config choice among the others.
func (a *actor) storeConfig(optionID string, value json.RawMessage) *events.Pending {
	c := a.choices()
	c[optionID] = value
	b, _ := json.Marshal(c)
	a.sess.ConfigChoices = b
	return a.emit(a.choicesDraft())
}

// choicesDraft is session.choices_changed with the session's choices as
// they now stand.
func (a *actor) choicesDraft() events.Draft {
	return a.draft("", &session.SessionChoicesChangedData{
		ModeChoice: a.sess.ModeChoice, ConfigChoices: a.sess.ConfigChoices})
}

func (m *Manager) optionResult(ctx context.Context, sessionID string, applied bool, p *events.Pending) (OptionResult, error) {
	if p != nil {
		if _, err := p.Wait(ctx); err != nil {
			return OptionResult{}, err
		}
	}
	c, err := m.Context(ctx, sessionID)
	return OptionResult{Applied: applied, Context: c}, err
}

// startChoices is what the user chose, carried into an agent start.
type startChoices struct {
	mode   string
	config map[string]json.RawMessage
}

func (a *actor) startChoices() startChoices {
	return startChoices{mode: a.sess.ModeChoice, config: a.choices()}
}

// reapply gives a freshly opened (or restored) agent session the user's
// choices where what the agent reports differs, before any prompt runs.
// A choice the agent no longer offers, or refuses, is logged and left
// stored: the session still works in the agent's own default.
func (m *Manager) reapply(ctx context.Context, conn runtimes.Agent, acpID string, ch startChoices) acp.SessionOptions {
	opts := conn.SessionOptions()
	log := m.cfg.Logger.With("acpSession", acpID)
	if s, ok := acp.ParseModes(opts.Modes); ok && ch.mode != "" && ch.mode != s.CurrentModeID {
		if !s.Has(ch.mode) {
			log.Warn("stored mode is no longer offered by the agent", "mode", ch.mode)
		} else if err := m.traced(ctx, "acp.session.set_mode", func(c context.Context) error { return conn.SetMode(c, acpID, ch.mode) }); err != nil {
			log.Warn("reapply mode", "mode", ch.mode, "err", err)
		} else {
			opts.Modes = acp.WithCurrentMode(opts.Modes, ch.mode)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ch.config)) {
		v := ch.config[id]
		o, ok := acp.FindConfigOption(opts.ConfigOptions, id)
		if !ok || acp.SameValue(o.CurrentValue, v) {
			continue
		}
		err := m.traced(ctx, "acp.session.set_config_option", func(c context.Context) error {
			got, err := conn.SetConfigOption(c, acpID, id, v)
			if err == nil {
				opts.ConfigOptions = got
			}
			return err
		})
		if err != nil {
			log.Warn("reapply config option", "option", id, "err", err)
		}
	}
	return opts
}

// reapplyChanged applies, off the actor, choices the user made while the
// agent was starting (the start reapplied those it knew of).
func (a *actor) reapplyChanged(p startPlan) {
	now := a.startChoices()
	if now.mode == p.choices.mode && maps.EqualFunc(now.config, p.choices.config, acp.SameValue) {
		return
	}
	conn, acpID, gen := a.conn, a.acpID, a.gen
	a.m.spawn(func() {
		opts := a.m.reapply(a.m.life, conn, acpID, now)
		a.mb.Post(func() {
			if a.gen == gen && a.conn == conn {
				a.adoptOptions(opts)
			}
		})
	})
}
