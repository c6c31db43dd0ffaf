// Package host is the executor host, `tetherd host` (issue 13, DESIGN.md
// section 9): it owns agent processes and their ACP connections, and
// serves the daemons connected to it (one, or several nodes sharing a
// database, each owning some of its sessions) over the host protocol
// (internal/hostproto) on a unix socket or over TLS. The daemon names a profile id; the host
// launches that profile from its own agents.yaml, answers the agent's fs/*
// requests on its own machine, and turns everything the agent says into
// records of a durable per-session outbox (internal/outbox), which the
// daemon acknowledges once it committed them.
//
// # Sessions
//
// A session is keyed by the daemon's session id and lives in
// <data-dir>/sessions/<id>/: its outbox (offsets from 1) and a meta file
// (profile, cwd, the agent's ACP session id, the session's generation). A
// start discards whatever an earlier incarnation of the session left
// there but its generation (the daemon starts its offsets over with a new
// agent) and stops its agent first. A session ends when the daemon
// acknowledges its exit record, the last one it ever has; its directory
// is then removed.
//
// # Records
//
// Each update goes to the session's queue (an agent's line copied into
// the queue's arena); the agent's reader appends the queue to the outbox
// once it has read all the agent wrote, or a window of lines (one write
// for a burst; the fsync follows within the outbox's SyncDelay), in
// arrival order. Requests, exits and commands' marks append the queue as
// they come, taking turns with the reader; the daemon's acknowledgements
// are made durable at most every ackInterval, as they only let the
// outbox drop records. A full outbox (errcode.OutboxFull) holds the
// reader in its append, retrying after the next acknowledgement or a
// backoff, so a daemon that falls behind slows the agent down; nothing is
// dropped. A permission request gets a host-wide
// id, a request record, and stays pending until the daemon answers it,
// however many times the daemon disconnects or restarts in between; if
// the agent withdraws it first, a request_closed record says so. The
// agent's end appends an exit record, after which the session takes no
// more records. A host that was killed finds its session directories on
// restart, with no agent behind them: each gets an exit record with Lost
// set, after everything its agent had produced. An outbox found damaged
// (outbox.Damage; or by a read while the host runs, damage.go) delivers
// its intact records and ends with an exit record that carries
// errcode.HostOutboxDamaged and what was lost; the damaged files go to
// <data-dir>/quarantine/<session id>/, which nothing removes.
//
// # Connections
//
// Every accepted connection runs the handshake (token, versions); every
// good one is kept beside the others (protocol version 4: several
// daemons). Records of a session flow on one connection, the session's
// route (route.go): the one that last attached it (CommandAttach{From}:
// records after From, the AttachResult first) or started it there
// (CommandStart: from offset 1, the StartResult first; records of the
// session between the start and its result belong to the incarnation it
// replaced, and the daemon neither keeps nor acknowledges them). An
// attach or start on another connection moves the route: the previous
// connection sends no record appended after, and its acks for the session
// are ignored. A command for a session first passes its fence: the
// session keeps the highest generation (hostproto.Command.Generation) a
// command carried, in its meta file, and refuses a lower one with
// errcode.HostSessionFenced, so that a node that lost the session can no
// longer drive its agent; a higher one that comes on another connection
// than the route stops the route there. One writer goroutine per
// connection
// sends every frame; per session at most Config.SendWindow records are
// sent and not yet acknowledged. Commands run in goroutines of their own,
// so a cancel or a permission answer never waits behind a prompt, and pass
// through one hostproto.Dedup for the host's lifetime, so a command resent
// after a reconnect is applied once and gets its first result (attach and
// status, which only read, are answered afresh). A command's result is
// sent only after every record of its session that was queued before the
// command returned: the command flushes the session's queue into the
// outbox (mark), and the writer holds the result until it has sent the
// session's records up to that offset, so a prompt's result follows the
// turn's last update and a load's result its replay. Records go into the
// outbox on the goroutine that produced them (the agent's reader flushes
// a burst of updates once it has read all the agent wrote), with no
// hand-off to another goroutine on a chunk's way.
//
// # Lifetime
//
// The host pings each daemon and closes a connection silent past
// Config.PingTimeout (a daemon that reconnected leaves its previous
// connection to that). With no daemon connected and no prompt in flight
// nor permission request pending, it waits Config.Linger, then Serve
// returns, closing every connection; Close then stops the agents (their
// exit records are appended) and closes the outboxes.
package host
