package events

import (
	"strconv"
	"unicode/utf8"

	"github.com/tether/tether/internal/session"
)

// Hand-written encoders for the payloads the writer encodes most (one
// message.chunk per streamed run of agent text): encoding/json's
// reflection was a tenth of the writer's CPU. Their output is byte for
// byte json.Marshal's (HTML-safe escaping included), which
// TestFastPayloadJSONMatchesEncodingJSON checks; the writer compares
// stored payloads as bytes (Latest drafts), so it must never differ.

// appendChunkJSON encodes the chunk as json.Marshal would.
func appendChunkJSON(b []byte, c *session.MessageChunkData) []byte {
	b = append(b, '{')
	b = appendCommonMembers(b, &c.EventCommon)
	b = append(b, `"messageId":`...)
	b = strconv.AppendInt(b, c.MessageID, 10)
	b = append(b, `,"role":`...)
	b = appendJSONString(b, string(c.Role))
	b = append(b, `,"text":`...)
	b = appendJSONString(b, c.Text)
	return append(b, '}')
}

// chunkJSONSize is how much room appendChunkJSON needs unless the text is heavy with
// escapes: the writer sizes the buffer once instead of growing it (a
// growth is a second allocation and copy, per chunk).
func chunkJSONSize(c *session.MessageChunkData) int {
	const members = len(`{"sessionId":"","taskId":"","promptId":"","messageId":,"role":"","text":""}`) + 20
	return members + len(c.SessionID) + len(c.TaskID) + len(c.PromptID) + len(c.Role) + len(c.Text) + len(c.Text)/8
}

// appendCommonMembers encodes the EventCommon members that are set, each followed by
// a comma (they always precede a payload's own members).
func appendCommonMembers(b []byte, c *session.EventCommon) []byte {
	for _, m := range [...]struct{ key, v string }{{`"sessionId":`, c.SessionID}, {`"taskId":`, c.TaskID}, {`"promptId":`, c.PromptID}} {
		if m.v != "" {
			b = append(b, m.key...)
			b = appendJSONString(b, m.v)
			b = append(b, ',')
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does:
// <, > and & escaped for HTML, U+2028 and U+2029 escaped for JavaScript,
// invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
