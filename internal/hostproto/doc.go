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
// Unknown members are ignored, so a version may add optional fields.
//
// # Handshake
//
// The client's first frame is a Hello: the range of protocol versions it
// speaks (MinVersion..MaxVersion), the host's token, its daemon id and
// build version. The host reads it under a 64 KiB limit (it does not know
// the peer yet) and answers with exactly one of
//
//   - Welcome: the highest version both speak, which the connection uses
//     from then on, the host's id and build version, and its outbox's next
//     and first unacknowledged offsets, from which the daemon decides what
//     to replay;
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
// range (MinVersion..MaxVersion = 1..1) so that a test can play a peer of
// another version; a newer daemon keeps the previous version in its range
// so that it reconnects to hosts not yet upgraded.
//
// # Messages after the handshake (version 1)
//
//   - Command (daemon → host): ID, Kind (new, load, resume, prompt, cancel,
//     permission_answer, stop, set_mode, set_config_option), SessionID
//     and a Kind-specific Payload. The ID is unique per command and kept
//     when the daemon resends it after a reconnect; the host passes every
//     command through Dedup, so a resent command is applied once and gets
//     the first result.
//   - CommandResult (host → daemon): the command's ID with an error (code
//     and message) or a result.
//   - Record (host → daemon): one outbox record — offset, session id,
//     kind (update, request, exit) and payload — sent in offset order,
//     after it is durable on the host (internal/outbox).
//   - Ack (daemon → host): every record up to the offset is committed to
//     the daemon's store; the host acknowledges it in its outbox, which
//     then drops it.
//   - Ping / Pong (either way): liveness; a Pong echoes its Ping's nonce.
//     A side that hears nothing within its deadline (Conn.RecvBefore)
//     treats the peer as gone and reconnects (daemon) or waits for the
//     next daemon (host).
//
// Unknown command kinds decode (CommandKind.Known tells them apart) so
// the host can answer them with an error result instead of dropping the
// connection.
//
// # Later steps
//
// This package is the codec and handshake only. The host server will run
// Server on each accepted connection, stream its outbox from the
// daemon's acknowledged offset as Records, and run Commands through
// Dedup. The daemon's executor will run Client on connect and reconnect,
// resend commands without a result, commit Records to its event log
// before Acking them, and ping the host while idle.
package hostproto
