// Package hostproto is the protocol between tetherd (the client) and an
// executor host, `tetherd host` (the server; issue 13, DESIGN.md section
// 9). It runs over any net.Conn — a unix socket for a detached host, TLS
// over TCP for a remote one; the transport and its security are the
// caller's — and carries the daemon's commands to the host's agents and
// the host's outbox records back.
//
// # Frames
//
// A frame is a 4-byte big-endian body length and the body, a JSON object
// whose first member is `type`. Bodies are bounded (Options.MaxFrame,
// DefaultMaxFrame 16 MiB): a sender refuses a larger one before writing
// anything (errcode.HostFrameTooLarge, the stream intact), a receiver
// refuses a larger length without reading the body (the same code, and
// the stream is lost). A stream ending inside a frame is
// errcode.HostProtocolError wrapping io.ErrUnexpectedEOF; one ending
// between frames is io.EOF, a clean close. A whole frame that is not a
// message of this protocol (not JSON, no or an unknown type, a field of
// the wrong type) is errcode.HostProtocolError for that frame alone.
// Unknown members are ignored, so a version may add optional fields (in
// a record before its payload, which stays the frame's last member).
//
// # Handshake
//
// The client's first frame is a Hello: the range of protocol versions it
// speaks (MinVersion..MaxVersion), the host's token, its daemon id and
// build version. The host reads it under a 64 KiB limit (it does not know
// the peer yet) and answers with exactly one of
//
//   - Welcome: the highest version both speak, which the connection uses
//     from then on, the host's id and build version, and the sessions it
//     holds (an outbox each), which the daemon then attaches;
//   - Refused{code, message}, after which the host closes: the token first
//     (errcode.HostUnauthorized; compared in constant time, lengths
//     hidden by hashing), then the frame (errcode.HostFrameTooLarge,
//     errcode.HostProtocolError for anything but a well-formed Hello),
//     then the versions (errcode.HostProtocolMismatch when the ranges do
//     not overlap).
//
// Client returns a refusal as an *errcode.Error with the host's code, so
// the daemon can show why (wrong token, upgrade needed) as the executor's
// error. Hello, Welcome and Refused keep their shape in every version:
// whatever two builds meet, they can tell each other whether they match.
// ClientConfig.Versions and ServerConfig.Versions override this build's
// range (MinVersion..MaxVersion = 1..4) so that a test can play a peer of
// another version; a newer daemon keeps the previous version in its range
// so that it reconnects to hosts not yet upgraded.
//
// # Messages after the handshake (version 1)
//
//   - Command (daemon → host): ID, Kind, SessionID (the daemon's session
//     id) and the kind's payload (payloads.go). Kinds: start (launch a
//     profile's agent and run the ACP handshake), attach (take up a
//     session's record stream after the offset the daemon committed),
//     status (what the host holds), and the agent's operations new, load,
//     resume, fork (sent only when the agent's capabilities say fork,
//     which a host older than the command never reports), prompt, cancel,
//     permission_answer, stop, set_mode and set_config_option. The ID is
//     unique per command and kept when the
//     daemon resends it after a reconnect or a restart; the host passes
//     every command through Dedup, so a resent command is applied once and
//     gets the first result. A prompt's ID is derived from its turn, so
//     that a daemon that restarted mid-turn resends it and waits for the
//     turn's end instead of prompting again.
//   - CommandResult (host → daemon): the command's ID with an error or a
//     result. An error keeps the agent's JSON-RPC error (ErrorBody.RPC),
//     so the daemon classifies it as it would a local agent's. A result is
//     sent after every record its command produced (a prompt's updates, a
//     load's replay).
//   - Record (host → daemon): one record of a session's outbox — offset
//     (from 1 per session), session id, kind (update, request,
//     request_closed, exit; version 2 adds acp_update) and payload — sent
//     in offset order once it is written to the host's outbox
//     (internal/outbox). Exit is a session's last. Records have a
//     hand-written codec (record.go) for the layout Encode writes; the
//     payload is not validated by Decode, its consumer decodes it.
//   - Ack (daemon → host): every record of the session up to the offset
//     is committed to the daemon's store (the daemon keeps that offset in
//     the same transaction); the host acknowledges it in the session's
//     outbox, which then drops it.
//   - Ping / Pong (either way): liveness; a Pong echoes its Ping's nonce.
//     A side that hears nothing within its deadline (Conn.RecvBefore)
//     treats the peer as gone and reconnects (daemon) or waits for the
//     next daemon (host).
//
// Unknown command kinds decode (CommandKind.Known tells them apart) so
// the host can answer them with an error result instead of dropping the
// connection.
//
// # Version 2
//
// One record kind more, acp_update: an agent's session/update
// notification exactly as the agent wrote it (acp.LineHandler), which the
// daemon decodes as it would from its own agent (acp.UpdateDecoder). The
// host then neither decodes an update nor encodes one, and the daemon
// decodes it once. On a version 1 connection the host converts such a
// record into an update record (dropping one that does not decode, which
// the daemon would drop too), so a new host serves an old daemon; a new
// daemon reads both kinds, so it serves an old host.
//
// # Version 3
//
// One command kind more, workspace (CommandWorkspace): the session's
// files, git state, terminals and commands, served by the host whether or
// not the agent runs. A daemon never sends it on an older connection.
//
// # Version 4: several daemons, fenced by generation
//
// Several daemons (tetherd nodes sharing one database) may be connected
// to a host at once, each owning some of its sessions; a host of version
// 4 keeps every authenticated connection instead of letting a new one
// replace the previous. The rules:
//
//   - A session's records flow on exactly one connection: the one that
//     last attached or started it. An attach or a start on another
//     connection moves the stream there: the previous connection sends
//     no record appended after the move, and an Ack it sends for the
//     session is ignored. The Welcome and status still list every
//     session; the host lingers only with no connection at all.
//   - Command.Generation is the daemon's fencing token for the session
//     (its lease's generation, which grows at every change of owner). The
//     host keeps per session the highest it accepted, on its own disk
//     with the session, so that a restarted host keeps it. A command
//     naming a session the host holds (every kind but status: start,
//     attach, the agent's operations, workspace) with a lower generation
//     is refused with errcode.HostSessionFenced before anything else,
//     even a resent command whose first result Dedup holds: it never
//     reaches the agent. A higher one becomes the session's before the
//     command acts; if it came on another connection than the session's
//     stream, that stream stops (the new owner's attach takes it up). An
//     attach or a start is checked again as it takes the stream, so of
//     two racing owners the newer wins. A start keeps the replaced
//     incarnation's generation if it is higher. A session the host does
//     not hold (never started, or ended and dropped) has no generation.
//   - Generation 0 (absent) is what a daemon of one node sends and an
//     older daemon omits: unfenced as long as no command carried more. A
//     version 3 daemon that reconnects therefore works as before: its
//     attaches move its sessions to the new connection, and the old one
//     goes at its ping timeout.
//
// A host of version 3 ignores Generation (an unknown member) and serves
// one daemon at a time: a daemon of this build connects to it, unfenced.
package hostproto
