package sessions

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// Replay equivalence (issue 29): a session's event log is its only truth.
// TestReplayEquivalence drives random sequences of commands (prompt,
// cancel, continue, withdraw, answer, resume, close), agent input
// (message and thought chunks under changing message ids, tool calls,
// plans, permission requests, prompt answers and failures, exits
// mid-turn), daemon restarts (clean, and a crash: the writer gone at an
// arbitrary point, the store reopened) and injected write failures (a
// trigger refusing a table's writes for a few steps) through a real
// Manager on a real store and writer, with scripted agents. After every
// step, once the session has settled, and after every restart, it folds
// each session's stored log and compares it with the rows, with what the
// Manager serves and with the actor's live state (replay_check_internal_test.go).
//
// TETHER_REPLAY_SEED sets the first sequence's seed (sequence i uses
// seed+i; a failure names its own): 1 by default, so that `make test`
// runs the same sequences every time and a failure there reproduces;
// any other seed explores further. TETHER_REPLAY_SEQUENCES and
// TETHER_REPLAY_STEPS set the size of the run; TETHER_REPLAY_FAULTS=0
// leaves the write failures out.
func TestReplayEquivalence(t *testing.T) {
	seed := envInt(t, "TETHER_REPLAY_SEED", 1)
	sequences := envInt(t, "TETHER_REPLAY_SEQUENCES", 12)
	steps := envInt(t, "TETHER_REPLAY_STEPS", 40)
	t.Logf("seed %d: rerun one sequence with TETHER_REPLAY_SEED=<its seed> TETHER_REPLAY_SEQUENCES=1", seed)
	var branched [3]int // rewinds, undos and forks that went through
	for i := range sequences {
		s := seed + i
		t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			p := runReplay(t, s, int(steps))
			for j, n := range p.branched {
				branched[j] += n
			}
		})
	}
	t.Logf("rewinds, undos and forks that went through: %v", branched)
	if sequences >= 12 && steps >= 40 && (branched[0] == 0 || branched[1] == 0 || branched[2] == 0) {
		t.Errorf("rewinds, undos and forks that went through: %v; the sequences never checked one of them", branched)
	}
}

func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// replay is one sequence: the rig, its sessions as the test's agents see
// them, and the steps taken so far (for a failure's message).
type replay struct {
	t        *testing.T
	r        *fakeRig
	rnd      *rand.Rand
	sessions []*replaySession
	// fault removes the write failure injected faultSteps steps ago.
	fault     func()
	faultLeft int
	faults    int
	faultsOn  bool
	steps     []string
	n         int // counter for ids and texts
	// ws is the sessions' directory, whose turns are checkpointed: a
	// step may rewind a session (and undo it) or fork it; branched counts
	// the rewinds, undos and forks that went through.
	ws       string
	branched [3]int
}

// replaySession is one session and its current agent, as the agent sees
// it: the prompt it holds unanswered, the tool calls it started.
type replaySession struct {
	id     string
	agent  *fakeAgent
	prompt *fakePrompt
	// msgID is the ACP messageId of the agent's last chunk.
	msgID string
	tools []string
}

func runReplay(t *testing.T, seed int64, steps int) *replay {
	p := &replay{t: t, r: newFakeRig(t), rnd: rand.New(rand.NewSource(seed)), faultsOn: os.Getenv("TETHER_REPLAY_FAULTS") != "0"}
	p.ws = p.r.withCheckpoints()
	p.addSession()
	p.addSession()
	for range steps {
		p.step()
		if p.faultLeft > 0 {
			if p.faultLeft--; p.faultLeft == 0 {
				p.unfault()
			}
		}
		for _, s := range p.sessions {
			p.settle(s)
			if p.fault == nil {
				p.check(s, false)
			} else {
				// While the store refuses writes, the log cannot follow
				// what the actor lives through (an agent's answer, an exit):
				// only the rows must still agree with it.
				p.checkRows(s)
			}
		}
	}
	p.unfault()
	p.note("end")
	for _, s := range p.sessions {
		p.settle(s)
		p.check(s, true)
	}
	p.restart(p.r.restart)
	return p
}

// endedTurns are the session's turns that ran and ended, as stored.
func (p *replay) endedTurns(s *replaySession) []string {
	turns, err := p.r.st.ListTurns(context.Background(), s.id)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range turns {
		if t.StartedAt != nil && t.State.Terminal() && !t.Rewound {
			out = append(out, t.PromptID)
		}
	}
	return out
}

// note records a step.
func (p *replay) note(format string, args ...any) {
	p.steps = append(p.steps, fmt.Sprintf(format, args...))
}

// fail reports a divergence with the steps that led to it.
func (p *replay) fail(format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("%s\nsteps:\n  %s", fmt.Sprintf(format, args...), strings.Join(p.steps, "\n  "))
}

func (p *replay) addSession() {
	sess, err := p.r.mgr.Create(context.Background(), CreateInput{AgentProfileID: "fake", Cwd: p.ws})
	if p.fault != nil && errcode.Is(err, errcode.StoreWriteFailed) {
		p.note("create: %v", err) // refused whole: there is no session
		return
	}
	if err != nil {
		p.fail("create: %v", err)
	}
	p.sessions = append(p.sessions, &replaySession{id: sess.ID})
	p.note("create %s", sess.ID)
}

func (p *replay) next() int { p.n++; return p.n }

// step takes one random step on a random session, among those that make
// sense for it now.
func (p *replay) step() {
	ctx := context.Background()
	s := p.sessions[p.rnd.Intn(len(p.sessions))]
	i := slices.Index(p.sessions, s)
	type action struct {
		weight int
		do     func()
	}
	var acts []action
	add := func(w int, ok bool, name string, f func() error) {
		if ok {
			acts = append(acts, action{w, func() {
				err := f()
				p.note("s%d %s: %v", i, name, err)
			}})
		}
	}
	holding := s.prompt != nil
	add(4, true, "prompt", func() error {
		_, err := p.r.mgr.Prompt(ctx, s.id, PromptInput{Prompt: textPrompt(fmt.Sprintf("prompt %d", p.next()))})
		return err
	})
	add(6, holding, "chunk", func() error { return p.chunk(s) })
	add(2, holding, "tool call", func() error { return p.toolCall(s) })
	add(1, holding, "plan", func() error {
		data := fmt.Sprintf(`[{"content":"step %d","status":"pending","priority":"medium"}]`, p.next())
		p.update(s, acp.Update{Kind: acp.UpdatePlan, Data: []byte(data)})
		return nil
	})
	add(2, holding, "ask permission", func() error { return p.askPermission(s) })
	add(2, len(p.pendingPermissions(s)) > 0, "answer permission", func() error {
		ids := p.pendingPermissions(s)
		id := ids[p.rnd.Intn(len(ids))]
		out := acp.PermissionOutcome{OptionID: []string{"ok", "no"}[p.rnd.Intn(2)]}
		if p.rnd.Intn(3) == 0 {
			out = acp.PermissionOutcome{Cancelled: true}
		}
		_, err := p.r.mgr.AnswerPermission(ctx, s.id, id, out)
		return err
	})
	add(3, holding, "end turn", func() error { s.prompt.answer("end_turn"); s.prompt = nil; return nil })
	add(1, holding, "prompt fails", func() error { s.prompt.fail(errInternal); s.prompt = nil; return nil })
	add(1, s.agent != nil, "agent exits", func() error { s.agent.end(acp.Exit{Code: 1, Stderr: "boom"}); return nil })
	add(1, true, "cancel", func() error { _, err := p.r.mgr.Cancel(ctx, s.id, CancelInput{}); return err })
	add(1, true, "continue", func() error { _, err := p.r.mgr.Continue(ctx, s.id, ""); return err })
	add(1, len(p.queued(s)) > 0, "withdraw", func() error {
		q := p.queued(s)
		_, err := p.r.mgr.Withdraw(ctx, s.id, q[p.rnd.Intn(len(q))])
		return err
	})
	add(1, true, "resume", func() error { _, err := p.r.mgr.Resume(ctx, s.id); return err })
	add(1, true, "rename or archive", func() error {
		title, archived := fmt.Sprintf("named %d", p.next()), p.rnd.Intn(2) == 0
		switch p.rnd.Intn(3) {
		case 0:
			_, err := p.r.mgr.UpdateInfo(ctx, s.id, &title, nil)
			return err
		case 1:
			_, err := p.r.mgr.UpdateInfo(ctx, s.id, nil, &archived)
			return err
		}
		_, err := p.r.mgr.UpdateInfo(ctx, s.id, &title, &archived)
		return err
	})
	add(1, holding, "agent titles", func() error {
		p.update(s, acp.Update{Kind: acp.UpdateSessionInfo, Data: []byte(fmt.Sprintf(`{"sessionUpdate":"session_info_update","title":"agent %d"}`, p.next()))})
		return nil
	})
	if p.rnd.Intn(12) == 0 {
		add(1, true, "close", func() error {
			_, err := p.r.mgr.Close(ctx, s.id)
			if len(p.sessions) < 4 {
				defer p.addSession()
			}
			return err
		})
	}
	// Rewind and fork (rewind.go, fork.go): a turn that ended, its files
	// written by the step, so that the restore has something to do.
	ended := p.endedTurns(s)
	add(1, len(ended) > 0, "rewind", func() error {
		to := ended[p.rnd.Intn(len(ended))]
		if err := os.WriteFile(filepath.Join(p.ws, "step.txt"), []byte(fmt.Sprintf("step %d", p.next())), 0o644); err != nil {
			return err
		}
		_, err := p.r.mgr.Rewind(ctx, s.id, RewindInput{ToTurn: to})
		if err == nil {
			p.branched[0]++
			// Every other rewind goes at once back, before any turn: by
			// count, not by the random source, whose draws depend on how
			// many steps went through (a coin here left some runs with
			// no undo at all).
			if p.branched[0]%2 == 1 {
				if _, err = p.r.mgr.UndoRewind(ctx, s.id); err == nil {
					p.branched[1]++
				}
			}
		}
		return err
	})
	add(1, true, "undo rewind", func() error {
		_, err := p.r.mgr.UndoRewind(ctx, s.id)
		if err == nil {
			p.branched[1]++
		}
		return err
	})
	add(1, len(ended) > 0 && len(p.sessions) < 6, "fork", func() error {
		f, err := p.r.mgr.Fork(ctx, s.id, ForkInput{AtTurn: ended[p.rnd.Intn(len(ended))], Cwd: filepath.Join(p.r.dir, fmt.Sprintf("fork-%d", p.next()))})
		if err == nil {
			p.sessions = append(p.sessions, &replaySession{id: f.ID})
			p.branched[2]++
		}
		return err
	})
	add(1, p.faultsOn && p.fault == nil, "write failure", func() error { p.inject(); return nil })
	if p.rnd.Intn(4) == 0 {
		add(1, true, "restart", func() error { p.restart(p.r.restart); return nil })
		add(1, true, "crash", func() error { p.restart(p.r.crash); return nil })
	}
	w := 0
	for _, a := range acts {
		w += a.weight
	}
	n := p.rnd.Intn(w)
	for _, a := range acts {
		if n -= a.weight; n < 0 {
			a.do()
			return
		}
	}
}

// chunk sends a message or thought chunk, now and then under a new ACP
// message id (or none).
func (p *replay) chunk(s *replaySession) error {
	switch p.rnd.Intn(5) {
	case 0:
		s.msgID = fmt.Sprintf("m%d", p.next())
	case 1:
		s.msgID = ""
	}
	kind := acp.UpdateAgentMessage
	if p.rnd.Intn(3) == 0 {
		kind = acp.UpdateAgentThought
	}
	p.update(s, acp.Update{Kind: kind, Text: fmt.Sprintf("text %d ", p.next()), MessageID: s.msgID})
	return nil
}

// toolCall starts a tool call or updates one the agent started.
func (p *replay) toolCall(s *replaySession) error {
	if len(s.tools) == 0 || p.rnd.Intn(2) == 0 {
		id := fmt.Sprintf("tc%d", p.next())
		s.tools = append(s.tools, id)
		p.update(s, acp.Update{Kind: acp.UpdateToolCall, Tool: &acp.ToolCall{ID: id, Title: strp("run " + id),
			Kind: strp("execute"), Status: strp("pending"), RawInput: []byte(`{"command":"ls"}`)}})
		return nil
	}
	id := s.tools[p.rnd.Intn(len(s.tools))]
	status := []string{"in_progress", "completed", "failed"}[p.rnd.Intn(3)]
	p.update(s, acp.Update{Kind: acp.UpdateToolCallUpdate, Tool: &acp.ToolCall{ID: id, Status: strp(status),
		RawOutput: []byte(fmt.Sprintf(`{"out":"%d"}`, p.next()))}})
	return nil
}

// update sends u from s's agent and waits until the actor has dealt with
// it.
func (p *replay) update(s *replaySession, u acp.Update) {
	u.SessionID = "fake-acp-session"
	s.agent.update(p.t, u)
}

// askPermission asks a question from s's agent and waits until the actor
// has recorded it or declined it.
func (p *replay) askPermission(s *replaySession) error {
	id := fmt.Sprintf("perm%d", p.next())
	tool := acp.ToolCall{ID: fmt.Sprintf("tc%d", p.next()), Title: strp("write " + id)}
	if len(s.tools) > 0 && p.rnd.Intn(2) == 0 {
		tool = acp.ToolCall{ID: s.tools[p.rnd.Intn(len(s.tools))]}
	} else {
		s.tools = append(s.tools, tool.ID)
	}
	out := s.agent.askPermission(acp.PermissionRequest{ID: id, SessionID: "fake-acp-session", Tool: tool,
		Options: []acp.PermissionOption{{ID: "ok", Name: "Allow", Kind: "allow_once"}, {ID: "no", Name: "Reject", Kind: "reject_once"}}})
	deadline := testDeadline(p.t)
	for {
		if slices.Contains(p.pendingPermissions(s), id) {
			return nil
		}
		select {
		case o := <-out:
			return fmt.Errorf("answered at once: %+v", o)
		case <-deadline:
			p.fail("permission request %s was neither recorded nor answered", id)
		case <-time.After(time.Millisecond):
		}
	}
}

// pendingPermissions are the requests s's actor holds open, sorted.
func (p *replay) pendingPermissions(s *replaySession) []string {
	var ids []string
	p.onActor(s, func(a *actor) {
		for id := range a.perms {
			ids = append(ids, id)
		}
	})
	slices.Sort(ids)
	return ids
}

// queued are the prompt ids in s's actor's queue.
func (p *replay) queued(s *replaySession) []string {
	var ids []string
	p.onActor(s, func(a *actor) {
		for _, t := range a.queue {
			ids = append(ids, t.PromptID)
		}
	})
	return ids
}

// onActor runs f on s's live actor, if it has one.
func (p *replay) onActor(s *replaySession, f func(a *actor)) bool {
	p.r.mgr.mu.Lock()
	a := p.r.mgr.actors[s.id]
	p.r.mgr.mu.Unlock()
	return a != nil && a.do(context.Background(), func() { f(a) }) == nil
}

// faultTables are the tables a write failure refuses writes to, with the
// writes refused.
var faultTables = []struct{ table, event string }{
	{"turns", "INSERT"}, {"turns", "UPDATE"}, {"messages", "INSERT"}, {"messages", "UPDATE"},
	{"message_chunks", "INSERT"}, {"tool_calls", "INSERT"}, {"tool_calls", "UPDATE"},
	{"permission_requests", "INSERT"}, {"permission_requests", "UPDATE"}, {"sessions", "UPDATE"},
	{"executors_running", "UPDATE"}, {"events", "INSERT"},
}

// inject makes the database refuse one table's writes for the next 1–4
// steps.
func (p *replay) inject() {
	f := faultTables[p.rnd.Intn(len(faultTables))]
	p.faults++
	p.fault = storetest.Fault(p.t, p.r.dir, fmt.Sprintf("replay_fault_%d", p.faults), f.event, f.table, "1 = 1")
	p.faultLeft = 1 + p.rnd.Intn(4)
	p.note("refuse %s on %s for %d steps", f.event, f.table, p.faultLeft)
}

func (p *replay) unfault() {
	if p.fault != nil {
		p.fault()
		p.fault, p.faultLeft = nil, 0
		p.note("writes accepted again")
	}
}

// restart restarts the daemon (with the rig's restart or crash), has the
// new one reconcile as tetherd does before it serves, and checks every
// session. The agents of the old daemon are gone.
func (p *replay) restart(how func()) {
	p.unfault()
	how()
	res, err := p.r.mgr.Reconcile(context.Background())
	p.note("restart (reconcile: %+v, %v)", res, err)
	for _, s := range p.sessions {
		s.agent, s.prompt, s.msgID = nil, nil, ""
		p.settle(s)
		p.check(s, true)
	}
}

// crash ends the daemon as a crash would: its writer stops at once (what
// it had queued commits, nothing after), its actors and agents go without
// a word reaching the store, and a new daemon opens the store again.
func (r *fakeRig) crash() {
	ctx := context.Background()
	r.w.Close()
	r.mgr.Shutdown(ctx) // every write it tries fails: the writer is gone
	_ = r.st.Close()
	r.st = storetest.Open(r.t, r.dir)
	r.hub = events.NewHub(events.HubConfig{})
	w, err := events.NewWriter(ctx, r.st, r.hub, events.WriterConfig{})
	if err != nil {
		r.t.Fatalf("writer: %v", err)
	}
	r.w = w
	r.mgr = r.newManager()
	// Before the store's own cleanup (registered just now) closes it.
	r.t.Cleanup(func() {
		r.mgr.Shutdown(ctx)
		r.w.Close()
	})
}

// settle waits until s's actor has nothing in flight: every write it
// submitted has reported (and a failed one has been reloaded from, once
// the store takes writes again), no
// agent start, no turn waiting for its agent to take or end it, no agent
// exit unheard. The agent's side is played meanwhile: new agents are
// adopted, prompts taken, cancels answered.
func (p *replay) settle(s *replaySession) {
	ctx := context.Background()
	deadline := testDeadline(p.t)
	var last string
	flush := func() {
		// Once a no-op write has been answered, every earlier write's
		// callbacks have run: a failed one has told its actor.
		if _, err := p.r.w.Do(ctx, func(*store.Store, events.Emit) error { return nil }); err != nil {
			p.fail("flush the writer: %v", err)
		}
	}
	look := func() (obs string, busy bool) {
		p.onActor(s, func(a *actor) {
			// A reload waiting for its backoff waits for the store: while
			// it refuses writes the session is as settled as it gets.
			reloading := a.reloading && (a.timers[timerReload] == nil || p.fault == nil)
			busy = reloading || a.starting || a.settling || len(a.admitting) > 0 ||
				p.r.mgr.reporting.Load() > 0 // an interrupted turn's changes, or its continuation, are on their way
			if c := a.conn; c != nil && isDone(c) {
				busy = true // its exit is on its way
			}
			if r := a.running; r != nil {
				holds := s.prompt != nil && r.conn == runtimes.Agent(s.agent)
				busy = busy || !holds && !a.stopping
			}
			obs = fmt.Sprintf("v%d q%d p%d", a.version, len(a.queue), len(a.perms))
		})
		return obs, busy
	}
	for {
		p.collect()
		flush()
		obs, busy := look()
		// What the actor wrote up to that look (a report that was on its
		// way and has just been taken, say) is written before the second
		// look; the actor settled only if nothing changed meanwhile.
		flush()
		again, stillBusy := look()
		busy = busy || stillBusy || again != obs
		if !busy && obs == last {
			return
		}
		last = obs
		select {
		case <-deadline:
			p.fail("session %s never settled (%s)", s.id, obs)
		case <-time.After(time.Millisecond):
		}
	}
}

func isDone(a runtimes.Agent) bool {
	select {
	case <-a.Done():
		return true
	default:
		return false
	}
}

// collect plays the agents' side: it adopts the agents the runtime
// started, takes the prompts they were sent, and answers a cancel of the
// prompt an agent holds.
func (p *replay) collect() {
	for {
		select {
		case a := <-p.r.rt.started:
			for _, s := range p.sessions {
				if s.id == a.session {
					s.agent, s.prompt, s.msgID = a, nil, ""
				}
			}
			continue
		default:
		}
		break
	}
	for _, s := range p.sessions {
		if s.agent == nil {
			continue
		}
	drain:
		for {
			select {
			case pr := <-s.agent.prompts:
				s.prompt = pr
			case <-s.agent.cancels:
				if s.prompt != nil {
					s.prompt.answer("cancelled")
					s.prompt = nil
				}
			default:
				break drain
			}
		}
	}
}
