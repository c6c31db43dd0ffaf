package hostproto

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// Records are nearly every frame a host sends, so they have a codec of
// their own: the body Encode would write for a Record, appended by hand,
// and read back by hand when a frame has exactly that layout. Anything
// else, or anything the hand-written reader is unsure of, goes through
// encoding/json as every other message does. A record's payload is
// neither escaped nor validated here: it is JSON already (the host's
// encoding or an agent's own line), it is the frame's last member (so it
// runs to the body's end), and the daemon decodes it anyway, treating one
// that does not decode as a malformed record.

const (
	recordPrefix  = `{"type":"record","offset":`
	recordSession = `,"sessionId":"`
	recordKind    = `","kind":"`
	recordPayload = `","payload":`
)

// plain reports whether s can stand in a JSON string as it is and be
// read back without unescaping: session ids are letters, digits, '-', '_'
// and '.', kinds are lower case and '_'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// appendRecordBody appends r's frame body to buf, as Encode would write
// it; ok is false (buf unchanged) when r does not fit the hand-written
// layout (an id or kind that needs escaping, no payload).
func appendRecordBody(buf []byte, r *Record) ([]byte, bool) {
	if len(r.Payload) == 0 || !plain(r.SessionID) || !plain(string(r.Kind)) {
		return buf, false
	}
	buf = append(buf, recordPrefix...)
	buf = strconv.AppendUint(buf, r.Offset, 10)
	buf = append(buf, recordSession...)
	buf = append(buf, r.SessionID...)
	buf = append(buf, recordKind...)
	buf = append(buf, r.Kind...)
	buf = append(buf, recordPayload...)
	buf = append(buf, r.Payload...)
	return append(buf, '}'), true
}

// AppendRecordFrame appends the frame of the record (offset, sessionID,
// kind, payload) to buf without building a Record: the host frames its
// outbox's records straight into its send buffer. The frame is the one
// Encode would give; it fails, leaving buf as it was, as Send would.
func AppendRecordFrame(buf []byte, offset uint64, sessionID string, kind RecordKind, payload []byte, maxFrame int) ([]byte, error) {
	r := Record{Offset: offset, SessionID: sessionID, Kind: kind, Payload: payload}
	if out, ok, err := appendHandFrame(buf, &r, maxFrame); ok {
		return out, err
	}
	return appendMessageFrame(buf, &Record{Offset: offset, SessionID: sessionID, Kind: kind, Payload: payload}, maxFrame)
}

// appendHandFrame appends r's frame with the hand-written codec; ok is
// false when r does not fit it.
func appendHandFrame(buf []byte, r *Record, maxFrame int) ([]byte, bool, error) {
	start := len(buf)
	out, ok := appendRecordBody(append(buf, 0, 0, 0, 0), r)
	if !ok {
		return buf, false, nil
	}
	size := len(out) - start - frameHeader
	if size > maxFrame {
		_, err := appendFrame(nil, out[start+frameHeader:], maxFrame) // the refusal
		return buf, true, err
	}
	binary.BigEndian.PutUint32(out[start:], uint32(size))
	return out, true, nil
}

// AppendFrame appends m's frame to buf, for WriteFrames.
func (c *Conn) AppendFrame(buf []byte, m Message) ([]byte, error) {
	return appendMessageFrame(buf, m, c.opts.MaxFrame)
}

// WriteFrames writes whole frames that AppendFrame or AppendRecordFrame
// built (with this Conn's MaxFrame), in one write; it fails as Send does.
func (c *Conn) WriteFrames(frames []byte) error { return c.write(frames) }

// MaxFrame is the frame limit of the Conn.
func (c *Conn) MaxFrame() int { return c.opts.MaxFrame }

// appendMessageFrame appends m's frame (length and body) to buf.
func appendMessageFrame(buf []byte, m Message, maxFrame int) ([]byte, error) {
	if r, ok := m.(*Record); ok && r != nil {
		if out, ok, err := appendHandFrame(buf, r, maxFrame); ok {
			return out, err
		}
	}
	body, err := Encode(m)
	if err != nil {
		return buf, err
	}
	return appendFrame(buf, body, maxFrame)
}

// decodeRecord reads body as a record if it has exactly the layout
// appendRecordBody writes; the payload shares body's memory. last, if
// set, is the session id of the previous record read, reused (and
// updated) so that a stream of one session's records allocates no id.
func decodeRecord(body []byte, last *string) (*Record, bool) {
	return decodeRecordInto(body, last, nil)
}

// decodeRecordInto is decodeRecord filling into, when set, instead of a
// new Record.
func decodeRecordInto(body []byte, last *string, into *Record) (*Record, bool) {
	rest, ok := bytes.CutPrefix(body, []byte(recordPrefix))
	if !ok {
		return nil, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && rest[0] == '0') {
		return nil, false
	}
	off, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest[n:], []byte(recordSession)); !ok {
		return nil, false
	}
	var sidb []byte
	if last != nil && len(*last) > 0 && bytes.HasPrefix(rest, []byte(*last)) && len(rest) > len(*last) && rest[len(*last)] == '"' {
		sidb, rest = rest[:len(*last)], rest[len(*last)+1:] // the previous record's id: known plain
	} else if sidb, rest, ok = cutPlain(rest); !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(recordKind[1:])); !ok {
		return nil, false
	}
	kindb, rest, ok := cutPlain(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(recordPayload[1:])); !ok {
		return nil, false
	}
	// The payload is the frame's last member (Record keeps it last), so it
	// runs to the body's closing brace: it is not scanned, as its
	// consumer decodes it anyway and takes one that does not decode as a
	// malformed record.
	end := len(rest) - 1
	if end < 2 || rest[0] != '{' || rest[end] != '}' || rest[end-1] != '}' {
		return nil, false
	}
	var sid string
	if last != nil && *last == string(sidb) { // compared without a copy
		sid = *last
	} else {
		sid = string(sidb)
		if last != nil {
			*last = sid
		}
	}
	r := into
	if r == nil {
		r = new(Record)
	}
	*r = Record{Offset: off, SessionID: sid, Kind: knownKind(kindb), Payload: rest[:end]}
	return r, true
}

// knownKind returns the record kind spelled b, without a copy for the
// kinds this version defines.
func knownKind(b []byte) RecordKind {
	for _, k := range [...]RecordKind{RecordACPUpdate, RecordUpdate, RecordRequest, RecordRequestClosed, RecordExit} {
		if string(k) == string(b) {
			return k
		}
	}
	return RecordKind(b)
}

// cutPlain reads a plain string's characters up to its closing quote,
// returning them and what follows the quote.
func cutPlain(b []byte) ([]byte, []byte, bool) {
	i := bytes.IndexByte(b, '"')
	if i < 0 || !plain(string(b[:i])) {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}
