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
//     decision_effects.go the effects a decision lists.
//   - actor.go is the state one actor owns, mailbox.go the loop that runs
//     its closures one at a time, effects.go where the actor performs the
//     effects decide returned.
//   - runtime.go is the seam to the agent: the actor talks to an Agent
//     that a Runtime started, a child process speaking ACP on stdio
//     (Standalone, childAgent) or an agent on an executor host
//     (hostruntime.go, executor.Agent). What only a hosted agent knows
//     (PromptTurn's turn name, Lost, ExitCause, PendingPermissions,
//     EndedOnHost, Gone) is part of Agent, a child answering the zero
//     value, so the actor asserts no agent's type.
//   - write.go and changes.go turn decisions into writes for the event
//     writer (package events); writefail.go is what happens when one fails.
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
//
// # One prompt, end to end
//
// POST /session/{id}/prompt (server/handlers.go) calls Manager.Prompt,
// which posts to the session's actor and waits (call, mailbox.go). On the
// actor, admit (turns.go) builds a view and asks decide (decidePrompt);
// the effects enqueue the turn, which submits its turn.queued write to the
// events.Writer. The writer commits it in a group commit and only then
// publishes it to the events.Hub, whose subscribers are the SSE streams
// (server/sse.go); the request answers 202 once that commit is done. Once
// the write has reported, decide (decideNext) starts the turn: startTurn
// records turn.started and hands the prompt to the Agent (PromptTurn).
// The agent's updates come back through agentHandler.Update (actor.go)
// to onUpdate (transcript.go), which asks decide (decideUpdate) what each
// one changes; each change is a write that commits before it is
// published; the agent's answer comes back as onTurnDone, which decide
// (decideTurnEnded) turns into the turn's end.
package sessions
