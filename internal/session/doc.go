// Package session is the domain of a session: its records (Session, Turn,
// Message, ToolCall, Permission, Executor, Task) and their states and
// rules, in the names every layer uses (DESIGN.md sections 2 and 10). It
// imports nothing internal: internal/store converts its rows to and from
// these records, server converts the API's types, and the session core
// decides with them.
package session
