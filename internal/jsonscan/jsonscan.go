// Package jsonscan finds the bounds of JSON values without decoding them:
// the few hot paths that only need to know where a value ends, or what a
// top-level member holds, read a line once instead of decoding it
// (acp.IsUpdateNotification, the host protocol's record frames), and how
// deeply a document nests (Depth: the bound on a prompt's nesting).
package jsonscan

import "bytes"

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// String returns the index just past the string starting at b[i] (a
// '"'), or -1 if it does not end, and whether it has escapes. It jumps
// from quote to quote (bytes.IndexByte), as a chunk's text is most of
// what a hot path scans.
func String(b []byte, i int) (end int, escaped bool) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, escaped || bytes.IndexByte(b[j:], '\\') >= 0
		}
		q := j + k
		if bytes.IndexByte(b[j:q], '\\') >= 0 {
			escaped = true
		}
		// The quote closes the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, escaped
		}
		j = q + 1
	}
}

// Value returns the index just past the JSON value at b[i], or -1 if its
// structure is broken. Strings and nesting are followed; scalars are
// taken up to the next delimiter without checking their spelling (the
// decoder that reads the line later does).
func Value(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := String(b, i)
		return end
	case '{', '[':
		// One pass, strings skipped inline: nested values are mostly
		// short strings, for which a call per string cost more than the
		// scan.
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				for j++; j < len(b) && b[j] != '"'; j++ {
					if b[j] == '\\' {
						j++ // the escaped byte, a quote or another backslash among them
					}
				}
				if j >= len(b) {
					return -1
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r', '{', '[', '"', ':':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Depth is the deepest nesting of arrays and objects in a valid JSON
// document (0 for a scalar). It scans bytes, so a hostile document costs no
// allocation and no recursion.
func Depth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth--
		}
	}
	return deepest
}
