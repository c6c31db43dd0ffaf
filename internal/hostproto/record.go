package hostproto

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/tether/tether/internal/jsonscan"
)

// Records are nearly every frame a host sends, so they have a codec of
// their own: the body Encode would write for a Record, appended by hand,
// and read back by hand when a frame has exactly that layout. Anything
// else, or anything the hand-written reader is unsure of, goes through
// encoding/json as every other message does. A record's payload is
// neither escaped nor validated here, only bounded: it is JSON already
// (the host's encoding or an agent's own line), and the daemon decodes it
// anyway, treating one that does not decode as a malformed record.

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

// appendMessageFrame appends m's frame (length and body) to buf.
func appendMessageFrame(buf []byte, m Message, maxFrame int) ([]byte, error) {
	if r, ok := m.(*Record); ok && r != nil {
		start := len(buf)
		out, ok := appendRecordBody(append(buf, 0, 0, 0, 0), r)
		if ok {
			size := len(out) - start - frameHeader
			if size > maxFrame {
				return appendFrame(buf, out[start+frameHeader:], maxFrame) // the refusal
			}
			binary.BigEndian.PutUint32(out[start:], uint32(size))
			return out, nil
		}
	}
	body, err := Encode(m)
	if err != nil {
		return buf, err
	}
	return appendFrame(buf, body, maxFrame)
}

// decodeRecord reads body as a record if it has exactly the layout
// appendRecordBody writes; the payload shares body's memory.
func decodeRecord(body []byte) (*Record, bool) {
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
	sid, rest, ok := cutPlain(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(recordKind[1:])); !ok {
		return nil, false
	}
	kind, rest, ok := cutPlain(rest)
	if !ok {
		return nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(recordPayload[1:])); !ok {
		return nil, false
	}
	// The payload must be one object, ending where the body's object ends:
	// a member after it (a later version's) takes the general path.
	if len(rest) == 0 || rest[0] != '{' {
		return nil, false
	}
	end := jsonscan.Value(rest, 0)
	if end < 0 || end != len(rest)-1 || rest[end] != '}' {
		return nil, false
	}
	return &Record{Offset: off, SessionID: sid, Kind: RecordKind(kind), Payload: rest[:end]}, true
}

// cutPlain reads a plain string's characters up to its closing quote,
// returning them and what follows the quote.
func cutPlain(b []byte) (string, []byte, bool) {
	i := bytes.IndexByte(b, '"')
	if i < 0 || !plain(string(b[:i])) {
		return "", nil, false
	}
	return string(b[:i]), b[i+1:], true
}
