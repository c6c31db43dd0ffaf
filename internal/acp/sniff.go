package acp

import (
	"bytes"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tether/tether/internal/jsonscan"
)

// IsUpdateNotification reports whether line is a session/update
// notification: a JSON object whose top-level "method" is
// "session/update" and which has no "id" (or a null one). It reads the
// line once and decodes nothing but the method: an executor host forwards
// such lines as they are (LineHandler), and the daemon decodes them once
// (UpdateDecoder). When it says true, the envelope decode of the daemon's
// own route agrees or fails (the line is not valid JSON: a scalar spelled
// wrong, brackets that do not match), and a line that fails is dropped
// with a log line either way.
//
// false means "not known to be one": anything the scan is unsure of (a
// key or method with escapes, a key that matches "id", "method" or
// "params" only case-insensitively, as encoding/json would match it,
// malformed structure) takes the decoding path, which decides.
func IsUpdateNotification(line []byte) bool {
	method, hasID, ok := sniffEnvelope(line)
	return ok && !hasID && string(method) == sdk.ClientMethodSessionUpdate
}

// sniffEnvelope scans the top-level members of the JSON object in line:
// the raw value of a string "method" (the last one, as encoding/json keeps
// the last of duplicate keys) and whether a non-null "id" is present. ok
// is false when the line is not a well-formed object at the top level or
// when the scan cannot judge it as encoding/json would.
func sniffEnvelope(line []byte) (method []byte, hasID, ok bool) {
	i := jsonscan.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return nil, false, false
	}
	i = jsonscan.SkipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return nil, false, jsonscan.SkipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return nil, false, false
		}
		end, escaped := jsonscan.String(line, i)
		if end < 0 || escaped {
			return nil, false, false
		}
		key := line[i+1 : end-1]
		i = jsonscan.SkipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return nil, false, false
		}
		i = jsonscan.SkipSpace(line, i+1)
		vstart := i
		if i = jsonscan.Value(line, i); i < 0 {
			return nil, false, false
		}
		val := line[vstart:i]
		switch {
		case string(key) == "method":
			if len(val) < 2 || val[0] != '"' {
				return nil, false, false // not a string: the decode fails
			}
			if _, esc := jsonscan.String(val, 0); esc {
				return nil, false, false
			}
			method = val[1 : len(val)-1]
		case string(key) == "id":
			hasID = string(val) != "null"
		case string(key) == "params":
		case bytes.EqualFold(key, []byte("method")) || bytes.EqualFold(key, []byte("id")) || bytes.EqualFold(key, []byte("params")):
			return nil, false, false
		}
		i = jsonscan.SkipSpace(line, i)
		if i >= len(line) {
			return nil, false, false
		}
		switch line[i] {
		case ',':
			i = jsonscan.SkipSpace(line, i+1)
		case '}':
			return method, hasID, jsonscan.SkipSpace(line, i+1) == len(line)
		default:
			return nil, false, false
		}
	}
}
