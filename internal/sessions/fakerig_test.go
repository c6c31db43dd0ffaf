package sessions

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/agents"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
	"github.com/tether/tether/internal/workspace"
)

// guardTimeout bounds every wait of these tests: reached only by a hang.
const guardTimeout = 20 * time.Second

// fakeProfiles knows one profile, "fake", whose agents the fake runtime
// runs.
type fakeProfiles struct{}

func (fakeProfiles) Spec(id string) (acp.Spec, agents.Profile, error) {
	if id != "fake" {
		return acp.Spec{}, agents.Profile{}, errcode.New(errcode.NotFound, "no agent profile %q", id)
	}
	return acp.Spec{Profile: id, Command: "fake-agent"}, agents.Profile{ID: id, Available: true}, nil
}

func (fakeProfiles) RecordCapabilities(context.Context, string, acp.Capabilities) error { return nil }

func (fakeProfiles) Fingerprint(id string) string { return id }

func (fakeProfiles) RecordCredentials(context.Context, string, agents.Credentials) error { return nil }

func (fakeProfiles) ConfigEdited() bool { return false }

// fakeRig is a manager on a real store, event writer and hub in a temp dir
// whose agents come from a fake runtime.
type fakeRig struct {
	t   *testing.T
	st  *store.Store
	hub *events.Hub
	w   *events.Writer
	rt  *fakeRuntime
	mgr *Manager
	dir string
	// ws, when set, has the rig's sessions record turn checkpoints
	// there, so that they can be rewound and forked (withCheckpoints).
	ws *workspace.Config
}

func newFakeRig(t *testing.T) *fakeRig {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.Open(t, dir)
	hub := events.NewHub(events.HubConfig{})
	w, err := events.NewWriter(ctx, st, hub, events.WriterConfig{})
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	r := &fakeRig{t: t, st: st, hub: hub, w: w, rt: newFakeRuntime(), dir: dir}
	r.mgr = r.newManager()
	// The daemon's order: stop actors, drain the writer, close the store
	// (the rig's own: a crash replaces them, see crash).
	t.Cleanup(func() {
		r.mgr.Shutdown(context.Background())
		r.w.Close()
		_ = r.st.Close()
	})
	return r
}

func (r *fakeRig) newManager() *Manager {
	cfg := Config{Runtime: r.rt, Logger: slog.New(slog.DiscardHandler)}
	if r.ws != nil {
		cfg.Workspace, cfg.TurnCheckpoints = *r.ws, true
	}
	return New(r.st, r.w, fakeProfiles{}, cfg)
}

// withCheckpoints has the rig's manager record turn checkpoints (in the
// rig's dir), and returns a directory for sessions to work in: not the
// rig's, which holds the store.
func (r *fakeRig) withCheckpoints() string {
	r.ws = &workspace.Config{Checkpoints: filepath.Join(r.dir, "checkpoints")}
	r.mgr.Shutdown(context.Background())
	r.mgr = r.newManager()
	ws := filepath.Join(r.dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return ws
}

// restart stops the manager as a daemon shutdown does (agents stopped,
// actors retired) and starts a new one on the same store.
func (r *fakeRig) restart() {
	r.mgr.Shutdown(context.Background())
	r.mgr = r.newManager()
}

// scene is one session of a fake rig with its running agent and a live
// subscription to its events.
type scene struct {
	r     *fakeRig
	sess  session.Session
	agent *fakeAgent
	sub   *events.Subscription
	// pending is the rest of the last batch sub delivered.
	pending []*store.Event
}

// readySession creates a session and waits until its agent is ready.
func (r *fakeRig) readySession(t *testing.T) *scene {
	t.Helper()
	ctx := context.Background()
	sess, err := r.mgr.Create(ctx, CreateInput{AgentProfileID: "fake", Cwd: r.dir})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	s := &scene{r: r, sess: sess}
	s.subscribe(t)
	if _, err := r.mgr.Resume(ctx, sess.ID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	s.agent = r.rt.next(t)
	return s
}

func (s *scene) subscribe(t *testing.T) {
	t.Helper()
	sub, err := s.r.hub.Subscribe(s.sess.ID)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	s.sub = sub
}

// prompt admits a text prompt.
func (s *scene) prompt(t *testing.T, text string) PromptResult {
	t.Helper()
	res, err := s.r.mgr.Prompt(context.Background(), s.sess.ID, PromptInput{Prompt: textPrompt(text)})
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return res
}

func textPrompt(text string) []byte {
	return []byte(`[{"type":"text","text":` + quote(text) + `}]`)
}

func quote(s string) string { return `"` + s + `"` }

// waitEvent returns the next committed event of type typ.
func (s *scene) waitEvent(t *testing.T, typ string) *store.Event {
	t.Helper()
	deadline := testDeadline(t)
	for {
		for len(s.pending) > 0 {
			e := s.pending[0]
			s.pending = s.pending[1:]
			if e.Type == typ {
				return e
			}
		}
		select {
		case <-s.sub.Ready():
			for _, b := range s.sub.Take(nil) {
				s.pending = append(s.pending, b...)
			}
		case <-s.sub.Done():
			t.Fatalf("subscription ended waiting for %s", typ)
		case <-deadline:
			t.Fatalf("no %s event", typ)
		}
	}
}

// types lists the session's committed events of the given types, in
// commit order, as "type prompt-index" (the index of the turn among
// prompts, so cases can name turns without knowing their ids).
func (s *scene) types(t *testing.T, prompts []string, only ...string) []string {
	t.Helper()
	evs, err := s.r.st.ListSessionEvents(context.Background(), s.sess.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if !slices.Contains(only, e.Type) {
			continue
		}
		name := e.Type
		if i := slices.Index(prompts, e.PromptID); i >= 0 && e.PromptID != "" {
			name += " " + string(rune('A'+i))
		}
		out = append(out, name)
	}
	return out
}

// turn reads a turn from the store once the actor's writes are durable.
func (s *scene) turn(t *testing.T, promptID string) session.Turn {
	t.Helper()
	s.status(t)
	tr, err := s.r.st.GetTurn(context.Background(), s.sess.ID, promptID)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// status is the session's status; it waits for the actor's last write.
func (s *scene) status(t *testing.T) Status {
	t.Helper()
	st, err := s.r.mgr.Status(context.Background(), s.sess.ID)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

func chunk(text, messageID string) acp.Update {
	return acp.Update{SessionID: "fake-acp-session", Kind: acp.UpdateAgentMessage, Text: text, MessageID: messageID}
}

func strp(s string) *string { return &s }
