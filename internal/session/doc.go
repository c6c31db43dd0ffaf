// Package session is the domain of a session: its records (Session, Turn,
// Message, ToolCall, Permission, Executor, Task) and their states and
// rules, in the names every layer uses (DESIGN.md sections 2 and 10); the
// domain events that change them (events.go, one payload type per event
// type of the contract) and State, their fold (state.go); and the rules
// that read a session's state: the recovery plan (recovery.go), its
// report (recovery_report.go), the resume context and the history export
// (history.go). It
// imports nothing internal: internal/store converts its rows to and from
// these records, server converts the API's types, and the session core
// decides with them.
package session
