// Package sessions runs live sessions. Each session is owned by one actor
// goroutine with a mailbox: admission of prompts, queueing, cancellation,
// permission answers and every state change happen there in order, so two
// requests can never race on a session's state. Agent I/O happens in other
// goroutines that post their results back to the actor.
//
// # Where things are
//
//   - The decision table: for every command and every agent input, what
//     the session does, as one pure function, decide. decide.go holds
//     decide and the commands, decide_agent.go the agent's reports (turn
//     ends, exits, session/update), decide_lifecycle.go an agent's start
//     (new, load, resume or injection), the reload after a failed write,
//     shutdown, and a session taken up from the store (start-up
//     reconciliation, an actor's load). decision.go holds its values
//     (the view it reads, the inputs, the decision it returns),
//     decision_effects.go the effects a decision lists: the domain events
//     it decides (effRecord) and runtime I/O (start, stop, cancel, prompt,
//     attach, answers, timers), 12 kinds; what a decision decides next,
//     once its effects are performed, is its Then (decision.then).
//   - actor.go is the state one actor owns, package mailbox the loop that runs
//     its closures one at a time, effects.go where the actor performs the
//     effects decide returned: one performer (performOne) for every kind,
//     given a job with what the command or input holds that is no plain
//     value (the turn to admit, a permission's reply channel, a start's
//     report), which also carries back what the caller is answered with.
//     record.go is the actor's evolve: each event a decision records,
//     folded into the actor's live fields as it is emitted. timers.go runs the actor's timers (the idle
//     clock, a load's settle, the reload after a failed write: effTimer).
//   - Package runtimes is the seam to the agent: the actor talks to an
//     Agent that a Runtime started, a child process speaking ACP on stdio
//     (runtimes.Standalone) or an agent on an executor host, whose
//     runtime is package internal/hosted (HostRuntime, Executors and the
//     optional interfaces beside them, implemented on internal/executor,
//     which this package does not import, nor they this one). What only a hosted agent
//     knows (PromptTurn's turn name, Lost, ExitCause, PendingPermissions,
//     EndedOnHost, Gone) is part of Agent, a child answering the zero
//     value, so the actor asserts no agent's type; what a hosted agent's
//     host reports besides goes to the actor's HostHandler. hosted.go
//     and late.go are what the actor does with an agent on a host
//     (attach, reconnect, late output).
//   - write.go and changes.go turn decisions into writes for the event
//     writer (package events), which the Manager holds as an EventLog
//     (eventlog.go: a test may put a fake there); writefail.go is what
//     happens when one fails.
//   - folded.go is the actor's folded log: a Recent session.State seeded
//     from the rows when first read and evolved by the events its writes
//     commit (docs/session.md). /context, /status and /continue of a live
//     session answer from it and the actor's own copies, reading no store
//     once it is seeded; continuation.go plans and admits a continuation
//     in one visit to the actor (continueStep).
//   - restore.go starts or restores an agent (the calls decideRestore
//     chooses); reconcile.go takes a session up from the store: what it
//     leaves open that nothing live will finish is repaired, as
//     decideRestarted decides, by the actor's own performer, at start-up
//     (on actors whose writes commit in one transaction) and whenever an
//     actor loads a session (takeUp); planinput.go reads the recovery
//     plan's input from the store where no live actor holds the session
//     (session.Plan).
//   - What is no part of the aggregate lives in the package that owns it:
//     a session's commands in package commands (their events enter the
//     session's log through its actor: Manager.Record), what the daemon
//     learns of agents' credentials and the check before a session is
//     created in package credentials, tasks (an aggregate of their own)
//     in package tasks, the runtimes' seam in package
//     runtimes (with how a start's failure is coded), the ACP schema of
//     modes and config options and an orphaned agent's stop in package
//     acp, a prompt's nesting bound in package jsonscan.
//
// # One prompt, end to end
//
// POST /session/{id}/prompt (server/handlers.go) calls Manager.Prompt,
// which posts to the session's actor and waits (mailbox.Call). On the
// actor, admit (turns.go) builds a view and asks decide (decidePrompt);
// its effect enqueues the turn, which emits turn.queued (queuedDraft,
// admission.go) to the events.Writer. The writer projects it (the turn's
// row, numbered; events/project.go), commits it in a group commit and only
// then publishes it to the events.Hub, whose subscribers are the SSE
// streams (server/sse.go); the request answers 202 once that commit is
// done. Once
// the write has reported, decide (decideNext) starts the turn: startTurn
// records turn.started and hands the prompt to the Agent (PromptTurn).
// The agent's updates come back through agentHandler.Update (actor.go)
// to onUpdate (transcript.go), which asks decide (decideUpdate) what each
// one changes; each change is a write that commits before it is
// published; the agent's answer comes back as onTurnDone, which decide
// (decideTurnEnded) turns into the turn's end: turn.completed (or failed,
// or cancelled), recorded (effRecord) and folded by record.go, which
// takes the turn off the agent.
//
// # What a change touches
//
//   - A new event type: the contract (api/openapi.yaml), its payload in
//     internal/session (events*.go: the type, EventType, evolve, its line
//     in that file's payloads list, and OnGlobalStream if GET /events carries it), its rows in internal/events/project.go if it has any,
//     and the emit site here: a.draft(promptID, payload), or, for an event
//     a decision decides, record(promptID, payload) in decide (a case in
//     the actor's evolve, record.go, only if it changes what the actor
//     holds live beyond the session record: an event that changes only
//     Session fields applies itself, session.ApplyToSession, and a field
//     it adds goes in Session.TakeLogged); docs/session.md walks through
//     it.
//   - A new command: its input and decision in decide.go (with its table
//     cases in decide_test.go), the Manager method that posts it to the
//     actor (a file named for the request flow: create.go, turns.go,
//     continuation.go, close.go, withdraw.go, options.go, …), and its
//     handler in server against the contract.
//   - A new runtime: an implementation of runtimes.Runtime and Agent
//     (internal/hosted is the one for executor hosts) chosen by Executors,
//     wired in cmd/tetherd; no rule here names a runtime's type.
package sessions
