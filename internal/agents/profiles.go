// Package agents holds the daemon's agent profiles: which ACP agents it can
// launch and how. Profiles come from three places, later ones winning: the
// built-in demo agent, real agents detected on PATH, and the operator's
// config file. A profile's command, args and env only ever come from the
// daemon side, never from an API request, so a client can choose an agent but
// never make the daemon run an arbitrary program.
//
// The registry also remembers what each agent advertised in ACP initialize
// (its capabilities), persisting them through the store so the recovery
// planner knows, right after a restart and before any agent has been started,
// whether a session can be resumed natively.
package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/sandbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// Profile sources, in increasing precedence.
const (
	// SourceBuiltin marks the demo agent shipped inside tetherd.
	SourceBuiltin = "builtin"
	// SourceDetected marks a well-known ACP agent looked up on PATH.
	SourceDetected = "detected"
	// SourceConfig marks a profile defined (or overridden) in the config file.
	SourceConfig = "config"
)

// DemoID is the id of the built-in demo agent profile. It is always present
// so a fresh install can run a session before any real agent is configured.
const DemoID = "demo"

// SessionIDPlaceholder is replaced by the agent's ACP session id in a
// profile's ResumeArgs.
const SessionIDPlaceholder = "{sessionId}"

// defaultProbeTimeout bounds a capability probe when the caller's context
// has no deadline: real agents are slow to start offline (DESIGN.md §4).
const defaultProbeTimeout = 30 * time.Second

// Profile is one launchable agent. Values handed out by the Registry are
// copies; mutating them does not affect the registry.
type Profile struct {
	ID          string
	DisplayName string
	// Command is the executable: resolved to an absolute path when it was
	// found, otherwise as written (so the reason can name it).
	Command string
	Args    []string
	// Env is extra environment for the agent process. It may hold secrets
	// (API keys): show keys, not values, to clients.
	Env map[string]string
	// EnvPassthrough names variables of the daemon's environment the agent
	// also gets, besides the allow-list every agent gets (acp.Spec).
	EnvPassthrough []string
	// Source is SourceBuiltin, SourceDetected or SourceConfig.
	Source string
	// Available is true when the command was found and is executable.
	Available bool
	// UnavailableReason says why Available is false, in words a user can act on.
	UnavailableReason string
	// NativeSessionResume is derived from the probed capabilities: true when
	// the agent advertised loadSession or sessionCapabilities.resume, i.e.
	// it can reattach to a stored ACP session itself.
	NativeSessionResume bool
	// HistoryContextInjection allows the daemon to prefix the next prompt
	// with the transcript when the agent cannot restore its own context.
	HistoryContextInjection bool
	// ResumeArgs, if set, are appended to Args when relaunching a CLI that
	// resumes with a flag; SessionIDPlaceholder is replaced by the session id.
	ResumeArgs []string
	// MaxAgents caps this profile's live agent processes (0: only the
	// daemon-wide --max-agents applies).
	MaxAgents int
	// Executor is where the profile's sessions run unless a session asks
	// otherwise (standalone, detached or a remote host's name; "" for the
	// daemon's --executor).
	Executor string
	// AutoContinue: the profile's sessions continue an interrupted turn
	// once by themselves after an agent crash or a lost executor
	// (sessions.CreateInput.AutoContinue overrides it per session).
	AutoContinue bool
	// Budget is what the profile's sessions may use, and their stall
	// watchdog: a session takes it when created, overlaid by its own
	// (sessions.CreateInput.Budget).
	Budget session.Budget
	// AuthMethod, if set, is the auth method tetherd authenticates with
	// after initialize (agents.yaml authMethod).
	AuthMethod string
	// Sandbox is the profile's sandbox policy (agents.yaml sandbox), what
	// it leaves unsaid taken from the defaults (sandbox.Policy.Defaults);
	// a session's own policy overrides it field by field.
	Sandbox sandbox.Policy
	// MCPServers is the JSON array of ACP McpServer a new session of this
	// profile is given (agents.yaml mcpServers); nil or [] for none.
	MCPServers json.RawMessage
	// Capabilities is what the agent advertised in initialize; nil until
	// the agent has been probed (or started) at least once.
	Capabilities *acp.Capabilities
	// ProbedAt is when Capabilities were observed.
	ProbedAt *time.Time
	// Credentials is what was last seen of the agent's credentials under
	// the profile's current Fingerprint; nil until seen.
	Credentials *Credentials
}

// ExpandResumeArgs returns ResumeArgs with every SessionIDPlaceholder
// replaced by sessionID, or nil when the profile has no resume template.
func (p Profile) ExpandResumeArgs(sessionID string) []string {
	if len(p.ResumeArgs) == 0 {
		return nil
	}
	out := make([]string, len(p.ResumeArgs))
	for i, a := range p.ResumeArgs {
		out[i] = strings.ReplaceAll(a, SessionIDPlaceholder, sessionID)
	}
	return out
}

// clone deep-copies p so callers can never alias the registry's state.
func (p Profile) clone() Profile {
	p.Args = slices.Clone(p.Args)
	p.ResumeArgs = slices.Clone(p.ResumeArgs)
	p.Env = maps.Clone(p.Env)
	p.EnvPassthrough = slices.Clone(p.EnvPassthrough)
	p.MCPServers = slices.Clone(p.MCPServers)
	p.Sandbox.Writable, p.Sandbox.Readable = slices.Clone(p.Sandbox.Writable), slices.Clone(p.Sandbox.Readable)
	p.Sandbox.Ports = slices.Clone(p.Sandbox.Ports)
	if p.Capabilities != nil {
		c := p.Capabilities.Clone()
		p.Capabilities = &c
	}
	if p.ProbedAt != nil {
		t := *p.ProbedAt
		p.ProbedAt = &t
	}
	if p.Credentials != nil {
		c := *p.Credentials
		p.Credentials = &c
	}
	return p
}

// setCapabilities records caps and derives the flags that depend on them.
func (p *Profile) setCapabilities(caps acp.Capabilities, at time.Time) {
	caps = caps.Clone()
	p.Capabilities = &caps
	p.ProbedAt = &at
	p.NativeSessionResume = caps.LoadSession || caps.Resume
}

// Persister is the part of the store the registry needs. It is an interface
// so the registry can be tested without a database and run without one.
// *store.Store satisfies it.
type Persister interface {
	// UpsertAgentProfile writes a profile. It must keep the stored
	// capabilities when p.Capabilities is nil.
	UpsertAgentProfile(ctx context.Context, p store.AgentProfile) error
	// ListAgentProfiles returns every stored profile.
	ListAgentProfiles(ctx context.Context) ([]store.AgentProfile, error)
}

// Config tells Load where to find things. Only DataDir is normally set;
// the rest have defaults or exist for tests.
type Config struct {
	// DataDir is the daemon's data directory.
	DataDir string
	// ConfigPath is the agent config file. Default: the first of
	// <DataDir>/agents.yaml, agents.yml, agents.json that exists. A ".json"
	// file is parsed as JSON, anything else as YAML. A missing file is not
	// an error: the daemon then runs with built-in and detected profiles.
	ConfigPath string
	// Self is the absolute path of the tetherd executable, which runs the
	// demo agent as a subcommand.
	Self string
	// DemoStateDir is where the demo agent keeps its sessions. Default:
	// <DataDir>/demo-agent.
	DemoStateDir string
	// LookPath resolves commands. Default: exec.LookPath.
	LookPath func(string) (string, error)
	// Store persists profiles and capabilities; nil keeps everything in memory.
	Store Persister
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// EnvPassthrough names variables of the daemon's environment every
	// agent gets on top of its profile's envPassthrough (checked with
	// acp.CheckPassthrough).
	EnvPassthrough []string
	// ProbeTimeout bounds a capability probe whose context has no deadline.
	// Default: 30 s.
	ProbeTimeout time.Duration
	// Hidden are paths no sandboxed agent may see (sandbox.Spec.Hidden):
	// the data dir, token files, sockets. The config file is added.
	Hidden []string
}

// Registry is the set of agent profiles. It is safe for concurrent use and
// hands out copies.
type Registry struct {
	mu       sync.RWMutex
	profiles map[string]*Profile

	// persistMu orders writes to the store so that two concurrent capability
	// recordings reach the database in the same order as memory.
	persistMu sync.Mutex
	store     Persister
	logger    *slog.Logger
	// passthrough is Config.EnvPassthrough, for every profile.
	passthrough []string
	// probeTimeout is Config.ProbeTimeout with its default.
	probeTimeout time.Duration
	// configPath and configDigest are the config file and its content
	// when the profiles were read from it (ConfigEdited).
	configPath, configDigest string
	// hidden and self complete every profile's sandbox (sandbox.Spec).
	hidden []string
	self   string
}

// Load builds the registry: built-in demo, detected agents, then the config
// file (whose entries override by id), then capabilities persisted by an
// earlier run. Every profile is written back to the store so that rows
// referenced by sessions reflect the current configuration.
func Load(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DemoStateDir == "" && cfg.DataDir != "" {
		cfg.DemoStateDir = filepath.Join(cfg.DataDir, "demo-agent")
	}

	profiles := map[string]*Profile{}
	demo := demoProfile(cfg.Self, cfg.DemoStateDir)
	profiles[demo.ID] = &demo
	for _, k := range knownAgents {
		p := k.detect(cfg.LookPath)
		profiles[p.ID] = &p
	}

	for _, name := range cfg.EnvPassthrough {
		if err := acp.CheckPassthrough(name); err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "agent env passthrough")
		}
	}
	path, err := configPath(cfg)
	if err != nil {
		return nil, err
	}
	// Taken before the file is read: an edit in between shows as one.
	digest := configDigest(path)
	entries, found, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		// An entry with the id of a built-in or detected profile replaces it.
		p := e.profile(cfg.LookPath)
		profiles[p.ID] = &p
	}

	r := &Registry{profiles: profiles, store: cfg.Store, logger: cfg.Logger, passthrough: slices.Clone(cfg.EnvPassthrough),
		probeTimeout: cfg.ProbeTimeout, configPath: path, configDigest: digest, self: cfg.Self,
		hidden: slices.Concat(cfg.Hidden, nonEmpty(path))}
	if r.probeTimeout <= 0 {
		r.probeTimeout = defaultProbeTimeout
	}
	if r.store != nil {
		if err := r.restoreCapabilities(ctx); err != nil {
			return nil, err
		}
		if err := r.persistAll(ctx); err != nil {
			return nil, err
		}
	}

	var avail []string
	for _, p := range r.List() {
		if p.Available {
			avail = append(avail, p.ID)
		} else {
			r.logger.Debug("agent profile unavailable", "agent", p.ID, "reason", p.UnavailableReason)
		}
	}
	r.logger.Info("agent profiles loaded", "config", path, "configFound", found, "profiles", len(profiles), "available", avail)
	return r, nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// demoProfile is the built-in demo agent: tetherd itself, run as the
// demo-agent subcommand.
func demoProfile(self, stateDir string) Profile {
	args := []string{"demo-agent"}
	if stateDir != "" {
		args = append(args, "--state-dir", stateDir)
	}
	p := Profile{
		ID:                      DemoID,
		DisplayName:             "Demo agent (built-in)",
		Command:                 self,
		Args:                    args,
		Source:                  SourceBuiltin,
		Available:               true,
		HistoryContextInjection: true,
		// Its sessions are kept in the state dir, inside the data dir that
		// stays hidden: the one part of it the demo agent may write.
		Sandbox: sandbox.Policy{Writable: nonEmpty(stateDir)}.Defaults(),
	}
	if self == "" {
		// Without our own path we cannot run the subcommand; say so rather
		// than fail later with an opaque exec error.
		p.Available = false
		p.UnavailableReason = "the path of the tetherd executable is unknown"
	}
	return p
}

// restoreCapabilities merges capabilities probed by an earlier run, and the
// credentials seen by it (restoreCredentials). Capabilities are only
// trusted while the profile still launches the same command with the same
// args: a different binary may advertise something else, so such a profile
// is simply probed again.
func (r *Registry) restoreCapabilities(ctx context.Context) error {
	stored, err := r.store.ListAgentProfiles(ctx)
	if err != nil {
		return fmt.Errorf("agents: list stored profiles: %w", err)
	}
	// Outside the lock below: a fingerprint reads the profile.
	for _, s := range stored {
		r.restoreCredentials(s.ID, s.Credentials)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range stored {
		p, ok := r.profiles[s.ID]
		if !ok || len(s.Capabilities) == 0 || s.ProbedAt == nil {
			continue
		}
		if s.Command != p.Command || !slices.Equal(s.Args, p.Args) {
			r.logger.Debug("agent command changed since last probe; capabilities dropped", "agent", s.ID)
			continue
		}
		caps, err := UnmarshalCapabilities(s.Capabilities)
		if err != nil {
			r.logger.Warn("ignoring unreadable stored agent capabilities", "agent", s.ID, "err", err)
			continue
		}
		p.setCapabilities(caps, *s.ProbedAt)
	}
	return nil
}

// persistAll writes every profile to the store.
func (r *Registry) persistAll(ctx context.Context) error {
	r.persistMu.Lock()
	defer r.persistMu.Unlock()
	for _, p := range r.List() {
		if err := r.store.UpsertAgentProfile(ctx, toRecord(p)); err != nil {
			return fmt.Errorf("agents: persist profile %q: %w", p.ID, err)
		}
	}
	return nil
}

// toRecord converts a profile to the store's record.
func toRecord(p Profile) store.AgentProfile {
	rec := store.AgentProfile{
		ID:                      p.ID,
		DisplayName:             p.DisplayName,
		Command:                 p.Command,
		Args:                    p.Args,
		Env:                     p.Env,
		Source:                  p.Source,
		Available:               p.Available,
		UnavailableReason:       p.UnavailableReason,
		NativeSessionResume:     p.NativeSessionResume,
		HistoryContextInjection: p.HistoryContextInjection,
		ResumeArgs:              p.ResumeArgs,
		ProbedAt:                p.ProbedAt,
		Credentials:             marshalCredentials(p.Credentials),
	}
	if p.Capabilities != nil {
		rec.Capabilities = MarshalCapabilities(*p.Capabilities)
	}
	return rec
}

// List returns every profile: the built-in first, then available before
// unavailable, then by id, so a picker's default choice is at the top.
func (r *Registry) List() []Profile {
	r.mu.RLock()
	out := make([]Profile, 0, len(r.profiles))
	for _, p := range r.profiles {
		out = append(out, p.clone())
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ab, bb := a.Source == SourceBuiltin, b.Source == SourceBuiltin; ab != bb {
			return ab
		}
		if a.Available != b.Available {
			return a.Available
		}
		return a.ID < b.ID
	})
	return out
}

// Get returns one profile, or an errcode.AgentProfileNotFound error.
func (r *Registry) Get(id string) (Profile, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.profiles[id]
	if !ok {
		return Profile{}, errcode.New(errcode.AgentProfileNotFound, "agent profile %q does not exist", id).With("agentProfileId", id)
	}
	return p.clone(), nil
}

// Spec returns how to launch the profile's agent (Dir left empty for the
// caller to set to the session's cwd) together with the profile. An
// unavailable profile yields errcode.AgentUnavailable carrying its reason (and
// the profile is still returned), so the user learns what to install or fix
// instead of seeing an exec failure.
func (r *Registry) Spec(id string) (acp.Spec, Profile, error) {
	p, err := r.Get(id)
	if err != nil {
		return acp.Spec{}, Profile{}, err
	}
	if !p.Available {
		reason := p.UnavailableReason
		if reason == "" {
			reason = fmt.Sprintf("agent %q is not available", id)
		}
		return acp.Spec{}, p, errcode.New(errcode.AgentUnavailable, "%s", reason).With("agentProfileId", id)
	}
	spec := acp.Spec{Profile: id, Command: p.Command, Args: slices.Clone(p.Args),
		Passthrough: slices.Concat(r.passthrough, p.EnvPassthrough), AuthMethod: p.AuthMethod,
		Sandbox: sandbox.Spec{Policy: p.Sandbox, Hidden: slices.Clone(r.hidden), Self: r.self}}
	// Sorted so the launched environment is deterministic (and testable).
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		spec.Env = append(spec.Env, k+"="+p.Env[k])
	}
	return spec, p, nil
}

// RecordCapabilities stores what the agent advertised in initialize, in
// memory and in the store, and re-derives NativeSessionResume. Callers that
// start agents for sessions should call it too, so capabilities track agent
// upgrades without a separate probe. The in-memory update happens even when
// persisting fails (the error is returned).
func (r *Registry) RecordCapabilities(ctx context.Context, id string, caps acp.Capabilities) error {
	return r.update(ctx, id, "capabilities", func(p *Profile) bool {
		p.setCapabilities(caps, time.Now().UTC())
		return true
	})
}

// update applies change to one profile in memory, then, when it reports a
// change, writes the whole profile to the store; both under persistMu, so
// that the store sees changes in memory's order. A full upsert (rather than
// one column) keeps derived columns, such as native_session_resume,
// consistent in one write. what names the change in errors.
func (r *Registry) update(ctx context.Context, id, what string, change func(p *Profile) bool) error {
	r.persistMu.Lock()
	defer r.persistMu.Unlock()
	r.mu.Lock()
	p, ok := r.profiles[id]
	if !ok {
		r.mu.Unlock()
		return errcode.New(errcode.AgentProfileNotFound, "agent profile %q does not exist", id).With("agentProfileId", id)
	}
	if !change(p) {
		r.mu.Unlock()
		return nil
	}
	snapshot := p.clone()
	r.mu.Unlock()
	if r.store == nil {
		return nil
	}
	if err := r.store.UpsertAgentProfile(ctx, toRecord(snapshot)); err != nil {
		return fmt.Errorf("agents: persist %s of %q: %w", what, id, err)
	}
	return nil
}
