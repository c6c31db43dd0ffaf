// Package executor is the daemon's side of the executor-host protocol
// (internal/hostproto; DESIGN.md section 9, issue 13): it keeps a
// connection to each `tetherd host`, reconnecting with backoff, and gives
// the session core an Agent per session with the method set of
// runtimes.Agent, whose calls are commands to the host.
//
// # Records and commits
//
// The host keeps one outbox per session; its records (updates, permission
// requests, request_closed, exit) reach the session's acp.Handler in
// offset order, with Update.Offset and PermissionRequest.Offset set. An
// update's done means the daemon committed it; the daemon commits in
// order, so done(N) commits every record up to N, and the Agent
// acknowledges N (coalesced: HostConfig.AckEvery, AckDelay), which lets
// the host drop them. Requests, request_closed and the exit count as
// committed once handed over: a request still pending is reported again
// by the next attach (AttachResult.Pending), and the exit ends the
// session. A handler that did not take an update (its session's actor is
// gone: the daemon stops) never calls its done, so the record, and every
// one after it, stays unacknowledged on the host for the next attach;
// such a handler answers a permission request with acp.ErrNoAnswer, and
// the host hears no answer: the request stays pending for that attach. The
// handler sees at most UpdateWindow updates not yet done, as
// for a local agent; records wait in the Agent meanwhile, which the
// host's outbox bounds (nothing is acknowledged before it is done).
//
// A command's result comes after every record it produced, and the caller
// is answered only after those records have been handed to the handler: a
// load's replay is delivered before LoadSession returns.
//
// # Reconnecting
//
// When the connection breaks, commands in flight stay pending; after the
// next handshake every attached session is attached again with From = its
// last commit, records the handler already has are dropped from the
// replay, and only then are the session's pending commands resent, with
// the same ids (the host applies each id once). Handlers implementing
// LinkHandler learn of the link going down and up; a WaitHandler hears
// why the link broke just before it goes down. A host unreachable for
// HostConfig.LostAfter is lost: its Agents end (Done, Lost() true, their
// Exit's Lost saying so) and their pending calls fail with
// errcode.ExecutorLost, classified
// acp.ClassDisconnected; each lost agent's stop stays queued, so that the
// host, if it comes back, does not run agents the daemon gave up on. A
// command the host answers with an error after the agent's exit record
// (a host restarted after a crash refuses the commands of the agents it
// lost) fails the same way, so the exit decides the turn.
//
// A Start waits while the host is reconnecting, except on a host that
// refused the daemon (a wrong token, a certificate that is not the pinned
// or CA-issued one, errcode.HostCertificateRejected, no common protocol
// version), where no retry helps: it fails at once. Either way its error
// is errcode.ExecutorUnavailable, caused by why the host was not reached.
//
// # Several nodes
//
// When several daemons share a database, HostConfig.Generation gives each
// session's fencing token (the generation of this node's lease on it):
// every command for the session carries it (protocol version 4), the
// workspace's included. A host that accepted a newer generation for the
// session refuses the command with errcode.HostSessionFenced: another
// node owns the session now. The Agent then ends on this daemon's side
// (Done, Fenced() true, Lost() false) with that error for its calls, and
// no stop goes to the host: the agent runs on for its new owner, whose
// attach took its records. A host older than version 4 ignores the
// generation.
//
// # Hosts
//
// DialUnix and DialTLS (a CA or a pinned certificate) reach a host;
// Detached starts the daemon's own local host when its socket does not
// answer; Pool holds the local host and the configured remote ones by
// name.
package executor
