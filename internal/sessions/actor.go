package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/mailbox"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
)

// actor owns one session's live state. Every field below is touched only by
// the mailbox goroutine; other goroutines talk to it by posting closures.
type actor struct {
	m   *Manager
	id  string
	mb  *mailbox.Mailbox
	log *slog.Logger
	// lease is the generation of the session's lease this actor was
	// loaded under (0 alone): its writes commit only under it. An actor
	// unloaded when its node lost or handed the lease over may still be
	// draining work; should the node take the session again meanwhile,
	// those writes must not land beside the new actor's.
	lease int64

	sess session.Session
	exec session.Executor
	// autoContinued are the interrupted turns this actor has continued by
	// itself (maybeAutoContinue): one audit event each.
	autoContinued map[string]bool

	// gen numbers agent incarnations so that late messages from a
	// previous process (updates, exits) are recognised and dropped.
	gen      int
	conn     runtimes.Agent
	acpID    string
	starting bool
	// deaf is the agent stopped for ignoring a cancel past CancelGrace
	// (cancelAgent): until its exit it takes no turn (ready), and what
	// was prompted meanwhile runs on a fresh agent.
	deaf runtimes.Agent
	// stopping is set by close and shutdown: exits are then expected.
	stopping bool
	// slot is the agent cap's reservation for the running or starting
	// agent (see limits.go); nil when the session has no agent.
	slot *agentSlot
	// timers are the stops of the actor's timers that run (effTimer,
	// timers.go), armed counts each kind's arming; activeAt is when the
	// agent's idle time began (timerIdle).
	timers   [timerKinds]func() bool
	armed    [timerKinds]uint64
	activeAt time.Time

	running *turnRun
	// late is the turn its executor host's loss interrupted, while what
	// the lost agent sent meanwhile may still arrive (late.go).
	late *lateRun
	// lateCandidate is the turn whose late output the lost agent may
	// still hold on its host after a daemon restart (lostTurnOf), until
	// it is taken up or known gone (late.go: takeUpLate).
	lateCandidate string
	queue         []session.Turn
	perms         map[string]*pendingPermission
	// turns indexes every turn of the session by prompt id (idempotency).
	turns map[string]session.Turn
	// admitting holds the turns whose admitting write has not reported
	// yet: they never reach the agent before it has (see admitted).
	admitting map[string]admission
	// replaying is set while a session/load replays history: those updates
	// are already in the transcript and must not be stored again. It stays
	// set until the next prompt, as some agents replay after the response.
	replaying bool
	replayed  int
	// replayUsers are the user messages the replay held, and replayLast
	// the kind of its last update (see noteReplay).
	replayUsers []string
	replayLast  acp.UpdateKind
	// settling holds prompts back while a load that replayed nothing waits
	// for a late replay.
	settling bool
	// rewinding is set while the executor restores the session's files
	// for a rewind (rewind.go): prompts are refused meanwhile.
	rewinding bool
	// waiters are told the outcome of the agent start in progress.
	waiters []chan error
	// lastErr is why the last start failed, for status.
	lastErr error
	// last is the latest write submitted for this session; version counts
	// them, so a plan made from a snapshot can tell whether it is current.
	last    *events.Pending
	version uint64
	// tracking, while set, collects the writes submitted (callWrites).
	tracking *[]*events.Pending
	// batch, while set, takes the actor's changes instead of the writer:
	// start-up commits every session's repairs in one transaction
	// (reconcile.go).
	batch *[]events.Change
	// reloading is set while a reload after a failed write is pending
	// (timerReload); backoff is how long the reload after the next failed write waits, failures
	// counts the failed writes, and unresolved holds the permission
	// outcomes whose writes failed, until a reload records them again
	// (see writefail.go).
	reloading  bool
	backoff    time.Duration
	failures   uint64
	unresolved map[string]permissionEnd
	// lastPromptID is the most recently admitted turn.
	lastPromptID string
	// recordOffset, while the actor handles a record of the agent's
	// executor host, is its offset: the writes it makes commit it too
	// (withRecord). hostPending are the permission requests pending in the
	// store that the host still holds after an attach, claimed when the
	// host delivers them again (askPermission).
	recordOffset uint64
	// hostTop is the highest absolute host offset the actor has handled
	// (or found committed): a new agent's numbering starts above it.
	hostTop     uint64
	hostPending map[string]session.Permission
	// attachOpen is set from the attach of a hosted agent until it has
	// settled (settleAttach): the agent runs on its host, or it ended
	// (its host lost it, or could not be reached) and its exit is
	// recorded. attachWaiters are closed then (awaitAttach).
	attachOpen    bool
	attachWaiters []chan struct{}
	// linkWhy is why the link to the executor host is breaking, told
	// just before it goes down (HostUnreachable, then LinkChanged).
	linkWhy error
	// Agent-reported session facts that are not transcript: commands and
	// config options as ACP arrays, modes an ACP SessionModeState, mode
	// the current mode id as a JSON string (see options.go).
	commands, modes, mode, configOptions json.RawMessage
	// state is the session as its log says, for the recovery plan
	// (folded.go), nil until something reads it; unfolded are the writes
	// not folded into it yet, and gap the history check made when it was
	// seeded.
	state    *session.State
	unfolded []*events.Pending
	gap      string
}

// turnRun is the turn currently executing on the agent.
type turnRun struct {
	turn        session.Turn
	conn        runtimes.Agent
	cancelTimer *time.Timer
	// msgID is the ACP messageId of the turn's last message chunk, and
	// split is set when a tool call, plan or permission came after it:
	// either way the next chunk starts a new message (see decideUpdate).
	msgID string
	split bool
	// openMsg is the store id of the message the turn's text chunks go to
	// (0 before the first), and openRole its role: the actor owns the
	// open message, so a chunk is one row append with no read.
	openMsg  int64
	openRole session.MessageRole
	// heard is when its agent last sent an update of it (the stall
	// watchdog's clock, budget.go); budgetStop what stopped it, when a
	// budget did (budget.exceeded's message).
	heard      time.Time
	budgetStop string
}

func newActor(m *Manager, sess session.Session, exec session.Executor, turns []session.Turn) *actor {
	a := &actor{
		m: m, id: sess.ID, lease: m.leaseOf(sess.ID), mb: mailbox.New(m.cfg.MailboxLimit, m.cfg.BusyTimeout), sess: sess, exec: exec, hostTop: exec.HostOffset,
		log:         m.cfg.Logger.With("session", sess.ID),
		perms:       map[string]*pendingPermission{},
		turns:       make(map[string]session.Turn, len(turns)),
		admitting:   map[string]admission{},
		unresolved:  map[string]permissionEnd{},
		hostPending: map[string]session.Permission{},
	}
	a.lateCandidate = lostTurnOf(exec, turns)
	for _, t := range turns {
		a.turns[t.PromptID] = t
		a.lastPromptID = t.PromptID // turns come in seq order
		if t.State == session.TurnQueued {
			// Admitted durably but never started: a new session's initial
			// prompt runs once the agent is ready; prompts queued before a
			// restart are held (sess.QueueHeld) until continue or prompt.
			a.queue = append(a.queue, t)
		}
	}
	return a
}

func (a *actor) ctx() context.Context { return context.Background() }

// onAgentExit handles the agent process ending, expected or not
// (decideAgentExited). Exits of an agent that is no longer the session's
// are stale.
func (a *actor) onAgentExit(gen int, conn runtimes.Agent) {
	defer a.settleAttach() // an attached agent that ended has settled
	if gen != a.gen || conn != a.conn {
		return
	}
	exit := conn.Exit()
	if !a.stopping {
		a.log.Warn("agent exited", "exit", exit.String(), "stderr", exit.Stderr)
	}
	a.agentEnded()
	_ = a.perform(decide(a.view(), agentExitedInput{Exit: exitInfo(exit), Lost: conn.Lost(), Cause: causeOf(conn.ExitCause()), At: time.Now().UTC()}), nil)
	a.dropSlot() // unless a fresh agent starts in its slot
}

// agentEnded notes what an agent's end is, before anything is decided on
// it: the session has no agent, and no load settles any more.
func (a *actor) agentEnded() {
	a.conn, a.settling = nil, false
}

// recordStopped marks the executor stopped after a deliberate stop; why,
// when not empty, is kept as the executor's message.
func (a *actor) recordStopped(conn runtimes.Agent, why string) {
	a.exec.ErrorMessage = why
	if conn != nil {
		if conn == a.conn {
			a.conn = nil
		}
		exit := conn.Exit()
		code := exit.Code
		a.exec.ExitCode, a.exec.ExitSignal = &code, exit.Signal
	}
	now := time.Now().UTC()
	a.exec.Status = session.ExecutorStopped
	a.exec.LastSeenAt = &now
	a.saveExecutor()
	a.dropSlot()
}

// stopping is the agent a shutdown stops off the actor, and why.
type stopping struct {
	conn runtimes.Agent
	why  string
}

// shutdown decides, on the actor, what a daemon stop does to the session
// (decideShutdown) and returns the agent to stop.
func (a *actor) shutdown() (stopping, error) {
	j := &job{}
	err := a.perform(decide(a.view(), shutdownCmd{}), j)
	return j.stop, err
}

// saveExecutor records the executor as it now stands: a
// session.executor_status carrying it whole, whose projection is its row
// (host offsets aside, which are the host outbox's bookkeeping).
func (a *actor) saveExecutor() {
	a.exec.SessionID = a.id
	a.emit(a.draft("", session.ExecutorStatusOf(a.exec)))
}

// agentHandler receives an agent's updates and permission requests and
// forwards them to the actor, tagged with the agent incarnation.
type agentHandler struct {
	a   *actor
	gen int
}

// Update queues u for the actor. Its credit (done) comes back once what the
// actor made of it is committed, so a flooding agent is held to the pace of
// the event writer: neither the mailbox nor the writer's queue holds more
// than the update window of one agent's updates. Nothing on this path waits
// for the agent (ACP calls run in goroutines of their own), which keeps the
// window free of deadlocks. An actor that is gone takes nothing (untaken).
func (h *agentHandler) Update(u acp.Update, done func()) {
	if !h.a.mb.Post(func() {
		h.a.withRecord(h.offset(u.Offset), func() { h.a.onUpdate(h.gen, u) })
		h.a.afterRecorded(u.Offset, done)
	}) {
		untaken(u.Offset, done)
	}
}

// Record commits the offset of a host record that brings no update (a
// permission request, its withdrawal, an update that does not decode) in
// order with the updates (executor.RecordHandler); done, like an
// update's, once it is durable.
func (h *agentHandler) Record(offset uint64, done func()) {
	if !h.a.mb.Post(func() {
		h.a.withRecord(h.offset(offset), func() {})
		h.a.afterRecorded(offset, done)
	}) {
		untaken(offset, done)
	}
}

// untaken answers for an update or record that reached the actor after
// its mailbox closed (the daemon stops, the session closed or moved to
// another node): nothing recorded it. A local agent's update (offset 0)
// is dropped and its credit comes back. A host record's done is withheld:
// it would commit the record, and the host, told so, would drop a record
// the store does not have; the next daemon's attach starts from the
// offset the store holds, and the host's stream would begin past it
// ("executor host skipped records", the record lost). Withheld, the
// record and every later one stay on the host for that attach; the credit
// it keeps only stops this daemon taking more of the agent's records,
// which nothing here would take.
func untaken(offset uint64, done func()) {
	if offset == 0 {
		done()
	}
}

// offset is a record's offset as the actor commits it: 0 for a previous
// agent's, whose outbox numbering is not the current agent's (on the
// actor).
func (h *agentHandler) offset(off uint64) uint64 {
	if h.gen != h.a.gen {
		return 0
	}
	return off
}

// RequestPermission asks the session's user, through the actor, and
// waits for the answer. An actor that is gone (its mailbox closed: the
// daemon stops, the session closed or moved to another node) takes no
// request: acp.ErrNoAnswer, which leaves a hosted agent's request pending
// on its host for the next daemon, as one asked before the stop is
// (hostPending), instead of telling the agent "cancelled".
func (h *agentHandler) RequestPermission(ctx context.Context, req acp.PermissionRequest) (acp.PermissionOutcome, error) {
	reply := make(chan acp.PermissionOutcome, 1)
	idc := make(chan string, 1)
	// A command like an API request: an agent asking faster than the actor
	// answers waits for room in the mailbox.
	if err := h.a.mb.PostWait(ctx, func() { idc <- h.a.onPermissionRequested(h.gen, req, reply) }); err != nil {
		if errors.Is(err, mailbox.ErrClosed) {
			return acp.PermissionOutcome{}, acp.ErrNoAnswer
		}
		return acp.PermissionOutcome{Cancelled: true}, nil
	}
	var id string
	select {
	case id = <-idc:
	case <-ctx.Done():
		return acp.PermissionOutcome{Cancelled: true}, nil
	}
	if id == "" {
		return acp.PermissionOutcome{Cancelled: true}, nil
	}
	select {
	case out := <-reply:
		return out, nil
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), acp.ErrAgentGone) {
			// The agent withdrew the question.
			h.a.mb.Post(func() { h.a.resolvePermission(id, session.PermissionCancelled, "") })
		}
		// Else the agent is gone: its exit expires the request (and says so),
		// which a "cancelled" posted from here would race.
		return acp.PermissionOutcome{Cancelled: true}, nil
	}
}
