package sessions

import (
	"context"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// ReconcileResult summarises start-up reconciliation.
type ReconcileResult struct {
	Sessions         int
	InterruptedTurns int
	// Reattached counts the hosted sessions being attached again.
	Reattached int
	Took       time.Duration
}

// Reconcile repairs what the previous daemon left behind, before the API
// serves anything: in every active session, a turn left running (or, with
// none running, the queued turn that was about to start) becomes
// interrupted (reason daemon_restart) with synthetic failures for its
// unfinished tool calls; prompts queued behind it stay queued, in order, and
// are held (sessions.queue_held) until the user continues or prompts; pending
// permissions expire, the session waits for input (task in REVIEW) and its
// executor row is re-derived — an orphaned agent process is stopped. No
// model request is sent. Messages left open get their streamed chunks
// folded into their text. A closed session its close left with an open
// turn, a pending permission or a live executor (the store refused those
// writes) gets them closed. It is decideRestarted on what the store holds
// of each session, performed by the session's actor code (see reconcile).
//
// With several nodes (Config.Ownership) a node reconciles only the
// sessions whose leases it can take (none another live node holds).
func (m *Manager) Reconcile(ctx context.Context) (ReconcileResult, error) {
	own := m.cfg.Ownership
	if own == nil {
		return m.reconcile(ctx, nil)
	}
	// The leases of the sessions to repair are taken before the scan that
	// repairs them reads them: what another node committed for one up to
	// its last commit (the host records it took) is then in what the
	// repair reads, and its agent is attached after them, not before (a
	// read first would replay them twice). A session at rest is taken
	// only if its repair writes something.
	active, err := m.store.ListActiveSessions(ctx)
	if err != nil {
		return ReconcileResult{}, err
	}
	taken := make(map[string]bool, len(active.ToRepair))
	for _, as := range active.ToRepair {
		_, err := own.Acquire(ctx, as.Session.ID)
		taken[as.Session.ID] = err == nil
	}
	return m.reconcile(ctx, func(id string) bool {
		if ok, seen := taken[id]; seen {
			return ok
		}
		_, err := own.Acquire(ctx, id)
		return err == nil
	})
}

// reconcile repairs the sessions keep accepts (every one when keep is
// nil); see Reconcile. Each session's repair is decided (decideRestarted)
// and performed by an actor made from what the start-up scan read, the
// way an actor that loads a session repairs it (takeUp); its writes are
// collected (actor.batch) and committed with every other session's in
// one transaction. Those actors are let go: a session whose agent is
// attached or started again loads its actor anew, from what committed.
func (m *Manager) reconcile(ctx context.Context, keep func(sessionID string) bool) (ReconcileResult, error) {
	start := time.Now()
	// Thousands of short reads: with a cancellable context the sqlite
	// driver starts a goroutine per row. Start-up is not cancelled mid-way.
	ctx = context.WithoutCancel(ctx)
	var res ReconcileResult
	// Every session to look at: those at rest by id, the others with
	// their executor rows, open turns and pending permissions, in five
	// queries whatever the number of sessions.
	active, err := m.store.ListActiveSessions(ctx)
	if err != nil {
		return res, err
	}
	var batch []events.Change
	var attach, restart []repaired
	var interrupted [][2]string // session, turn
	for _, s := range active.AtRest {
		_, _, specErr := m.profiles.Spec(s.AgentProfileID)
		sess := session.Session{ID: s.ID, TaskID: s.TaskID, AgentProfileID: s.AgentProfileID, State: session.SessionWaitingForInput}
		in := restartedInput{AgentAvailable: specErr == nil}
		d := decide(view{State: sess.State}, in)
		if len(d.Effects) > 0 && (keep == nil || keep(s.ID)) { // its agent went away with the old config
			_ = m.repairActor(sess, session.Executor{}, nil, &batch).perform(d, nil)
		}
	}
	var claimed []string
	defer func() { m.releaseRepairs(claimed) }() // idempotent: on every way out
	for _, as := range active.ToRepair {
		if keep != nil && !keep(as.Session.ID) {
			continue // another live node owns it
		}
		if !m.claimRepair(as.Session.ID) {
			continue // a request loaded it first: its load repaired it (takeUp)
		}
		claimed = append(claimed, as.Session.ID)
		_, _, specErr := m.profiles.Spec(as.Session.AgentProfileID)
		in := restartedOf(as.Session, as.Executor, as.OpenTurns, as.Permissions, specErr == nil, false)
		in.Repair = true // the scan found something to repair
		a := m.repairActor(as.Session, as.Executor, as.OpenTurns, &batch)
		res.Sessions++
		var tally repairTally
		d := decide(a.view(), in)
		_ = a.perform(d, &job{repair: &tally})
		if tally.attach {
			attach = append(attach, repaired{a, as.Permissions})
		}
		if tally.restart {
			restart = append(restart, repaired{a, as.Permissions})
		}
		for _, promptID := range restartInterrupted(d) {
			res.InterruptedTurns++
			interrupted = append(interrupted, [2]string{a.id, promptID})
		}
	}
	// One transaction for everything (startupRepair).
	repair := startupRepair{changes: batch}
	if keep != nil {
		repair.sessions = append([]string{}, claimed...)
	}
	if _, err := m.w.SubmitContext(ctx, repair).Wait(ctx); err != nil {
		return res, err
	}
	// Hosted agents went on without the daemon: their actors attach to
	// them again in the background (a host may be slow to reach).
	for _, r := range attach {
		a, err := m.registerRepaired(ctx, r)
		if err != nil {
			return res, err
		}
		a.mb.Post(a.attach)
	}
	for _, r := range restart {
		a, err := m.registerRepaired(ctx, r)
		if err != nil {
			return res, err
		}
		a.mb.Post(a.ensureAgent)
	}
	// The repairs are committed and their actors registered: actors of
	// the other repaired sessions load what committed.
	m.releaseRepairs(claimed)
	for _, it := range interrupted {
		m.reportChanges(it[0], it[1])
	}
	if err := m.commands.Resume(ctx, keep); err != nil {
		return res, err
	}
	m.spawn(m.credentials.Sweep)
	m.spawn(m.takeUpLateOutput)
	res.Reattached = len(attach) + len(restart)
	res.Took = time.Since(start)
	return res, nil
}

// repairActor is an actor of session sess, with its executor row and its
// open turns as the start-up scan read them, whose writes go to batch.
// It never runs a mailbox: start-up performs a decision on it, and lets
// it go.
func (m *Manager) repairActor(sess session.Session, ex session.Executor, open []session.Turn, batch *[]events.Change) *actor {
	a := newActor(m, sess, ex, open)
	a.batch = batch
	return a
}

// claimRepair marks session id as being repaired by this reconciliation,
// unless an actor holds it already (a request on a running node loaded it
// after this node took its lease: that load repaired it). Until
// releaseRepairs, an actor for it waits (Manager.actor): the repair's own
// actor, registered once its writes have committed, is the session's.
func (m *Manager) claimRepair(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, live := m.actors[id]; live {
		return false
	}
	m.repairing[id] = make(chan struct{})
	return true
}

// releaseRepairs lets the actors waiting for the repairs of sessions ids
// go on (claimRepair); a session released already is left alone.
func (m *Manager) releaseRepairs(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if ch, ok := m.repairing[id]; ok {
			close(ch)
			delete(m.repairing, id)
		}
	}
}

// startupRepair is every session's start-up repair, committed in one
// transaction (one commit, not one per writer batch): nothing else writes
// before the API answers, and a failure fails start-up whichever session
// it is in. Messages a crash left open keep their streamed text as chunk
// rows (committed with their events); they are folded into their
// messages first: every session's alone, the repaired ones' (sessions) on
// a node of a cluster, whose other nodes' sessions stream on.
type startupRepair struct {
	changes  []events.Change
	sessions []string
}

func (startupRepair) SessionID() string { return "" }

func (r startupRepair) Apply(ctx context.Context, tx *store.Store, emit events.Emit) error {
	if _, err := tx.FoldMessageChunks(ctx, r.sessions); err != nil {
		return err
	}
	for _, c := range r.changes {
		if err := c.Apply(ctx, tx, emit); err != nil {
			return err
		}
	}
	return nil
}

// repaired is a hosted session start-up repaired: its repair actor, and
// the pending permission requests the scan found, which the repair leaves
// to the session's host (decideHostedTakenUp).
type repaired struct {
	a       *actor
	pending []session.Permission
}

// registerRepaired makes the live actor of a hosted session start-up
// repaired from what the scan read and the repair committed, reading only
// its turns: loading each of a hundred reattaching sessions whole again
// (m.actor) held up start-up.
func (m *Manager) registerRepaired(ctx context.Context, r repaired) (*actor, error) {
	l := loaded{sess: r.a.sess, exec: r.a.exec, pending: r.pending}
	var err error
	if l.turns, err = m.store.ListTurns(ctx, r.a.id); err != nil {
		return nil, err
	}
	a, _, err := m.register(l, true)
	return a, err
}

// restartedOf is what decideRestarted needs to know of a session, from
// what the store holds of it: its executor row, its running and queued
// turns in run order (turns may hold others: they are left out) and its
// pending permission requests. available: its agent profile resolves;
// load: an actor loads it in a running daemon (restartedInput.Load).
func restartedOf(sess session.Session, ex session.Executor, turns []session.Turn, perms []session.Permission, available, load bool) restartedInput {
	in := restartedInput{Load: load, Executor: ex.Status, AgentAvailable: available,
		Orphan: !load && ex.PID > 0 && ex.Runtime == session.RuntimeStandalone,
		Hosted: ex.Runtime != session.RuntimeStandalone && ex.Runtime != "" && executorLive(ex.Status)}
	for _, t := range turns {
		if t.State == session.TurnRunning || t.State == session.TurnQueued {
			in.Turns = append(in.Turns, storedTurn{PromptID: t.PromptID, State: t.State})
		}
	}
	for _, p := range perms {
		in.Permissions = append(in.Permissions, p.ID)
	}
	in.Repair = leftOpen(sess.State, ex.Status, len(in.Turns)+len(in.Permissions) > 0)
	return in
}

// leftOpen reports whether a session in state, with its executor in
// status and (open) a running or queued turn or a pending permission, has
// something to repair when it is taken up from the store: the sessions
// the start-up scan does not count at rest (store.ListActiveSessions). An
// active session is at rest waiting for input with its agent stopped and
// nothing open; a closed one with nothing open and no live executor. A
// session just created (CREATED) has nothing to repair: its actor starts
// its agent.
func leftOpen(state session.SessionState, status session.ExecutorStatus, open bool) bool {
	switch {
	case state.Terminal():
		return open || executorLive(status)
	case state == session.SessionCreated:
		return false
	}
	return open || state != session.SessionWaitingForInput || executorLive(status)
}

// executorLive reports whether an executor in status has (or is getting)
// an agent: ready, starting, or reconnecting to its host.
func executorLive(status session.ExecutorStatus) bool {
	return status == session.ExecutorReady || status == session.ExecutorStarting || status == session.ExecutorReconnecting
}

// takeUp repairs, first thing on an actor that has just loaded its
// session, what the store holds of it that nothing live will finish
// (decideRestarted, Load): the store's rows are the log's projection, so
// in is decided on the log as it stands (restartedOf).
func (a *actor) takeUp(in restartedInput) {
	_ = a.perform(decide(a.view(), in), nil)
}

// repairTally is what start-up's repair of a session leaves for after its
// commit: to attach to the agent on its host, or start it again.
type repairTally struct {
	attach, restart bool
}

// restartInterrupted is the turns start-up's repair d interrupted (its
// turn.interrupted records), which the reconcile report counts.
func restartInterrupted(d decision) []string {
	var ids []string
	for _, e := range d.Effects {
		if r, ok := e.(effRecord); ok {
			if p, ok := r.Event.(*session.TurnInterruptedData); ok {
				ids = append(ids, p.PromptID)
			}
		}
	}
	return ids
}

// loaded is what an actor loads of its session.
type loaded struct {
	sess    session.Session
	exec    session.Executor
	turns   []session.Turn
	pending []session.Permission
}

// load reads session id, its executor, its turns and its pending
// permission requests. They are not read in one snapshot, which would
// cost about as much as the reads themselves: nothing writes a session
// without an actor but what its earlier actor may still have in flight.
func (m *Manager) load(ctx context.Context, id string) (l loaded, err error) {
	if l.sess, err = m.store.GetSession(ctx, id); err != nil {
		return l, err
	}
	if l.exec, err = m.store.GetExecutor(ctx, id); err != nil {
		return l, err
	}
	if l.turns, err = m.store.ListTurns(ctx, id); err != nil {
		return l, err
	}
	l.pending, err = m.store.ListPendingPermissions(ctx, id)
	return l, err
}

// stopOrphan stops the agent process the previous daemon started for the
// session (effStopAgent, stopOrphaned).
func (a *actor) stopOrphan() {
	spec, _, _ := a.m.profiles.Spec(a.sess.AgentProfileID)
	acp.StopOrphan(a.exec.PID, spec.Command, spec.Args) // now: the old agent must not run on
}

// knownAuthFailure reports whether the session's last start failed because
// the agent wants credentials and its profile is unchanged since: starting
// it again at every start-up would fail the same way (and, for agents that
// open a browser or a terminal login, bother the user).
func (m *Manager) knownAuthFailure(ex session.Executor, profileID string) bool {
	if ex.Status != session.ExecutorError || ex.ErrorCode != string(errcode.AgentAuthRequired) {
		return false
	}
	fp := m.profiles.Fingerprint(profileID)
	return fp != "" && ex.ErrorProfile == fp
}

// Resume restores a session's agent and waits, event-driven and bounded by
// the configured timeout, until it is ready or failed.
func (m *Manager) Resume(ctx context.Context, sessionID string) (Status, error) {
	a, err := m.actor(ctx, sessionID)
	if err != nil {
		return Status{}, err
	}
	ch, err := mailbox.Call(ctx, a.mb, a.resume)
	if err != nil {
		return Status{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, m.cfg.ResumeWait)
	defer cancel()
	select {
	case err = <-ch:
	case <-a.mb.Done():
		err = errcode.New(errcode.SessionTerminal, "session was closed while its agent was starting")
	case <-wctx.Done():
		err = errcode.Wrap(errcode.Timeout, wctx.Err(), "the agent was not ready within %s", m.cfg.ResumeWait).With("retryAfter", 5)
	}
	if serr := a.sync(ctx); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return Status{}, err
	}
	return m.Status(ctx, sessionID)
}
