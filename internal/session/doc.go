// Package session is the domain of a session: its records (Session, Turn,
// Message, ToolCall, Permission, Executor, Task) and their states and
// rules, in the names every layer uses (DESIGN.md sections 2 and 10). It
// imports nothing internal: internal/store converts its rows to and from
// these records, server converts the API's types, and the session core
// (internal/sessions) decides with them.
//
// # The aggregate
//
// A session is one aggregate whose event log is its only truth
// (docs/session.md):
//
//   - An event is a fact that happened to the session, in the session's
//     order: a domain event (events.go, events_turn.go,
//     events_transcript.go), one payload type per event type of the
//     contract (api/openapi.yaml), named like its *Data schema, which
//     knows its type name (EventType) and, when it changes the state, how
//     (evolve, next to it). Payloads lists them all. internal/events
//     numbers an event (seq), projects its rows, commits it and publishes
//     it.
//   - A state is what the events say so far: State, changed only by
//     Evolve, one event at a time, in log order (state.go). Fold builds it
//     from a whole log; a Recent state keeps what the recovery plan reads
//     (every turn, the flags, the pending permissions, the output of the
//     latest turn) and is what a live session actor holds, seeded from the
//     rows when first read (Seed) and evolved by the events its writes
//     commit.
//   - A rule that reads a state is a pure function here: the recovery plan
//     (Plan over PlanInput, recovery.go; State.PlanInput makes its input),
//     the report of an interrupted turn (recovery_report.go), the resume
//     context and the history export (history.go). The tests compare a
//     fold with what a view serves with onetruth.Diff.
//
// Every view of a session (its rows, /transcript, /status, /context, the
// recovery plan) must equal what Fold of its log gives; the replay test
// (internal/sessions, replay_internal_test.go) and the black-box one truth
// check (internal/onetruth, run by the crash, server and cluster suites)
// hold them to it.
package session
