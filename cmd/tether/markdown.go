package main

import (
	"regexp"
	"strings"

	"github.com/charmbracelet/glamour"
)

// markdown renders one message's Markdown as it streams, a block at a
// time, so what is on screen never changes once printed: each complete
// line stands alone (a paragraph's line, a heading, a list item), except
// a fenced code block and a table, which are held until they end. The
// text after the last newline waits for more (or for end).
type markdown struct {
	render  func(string) string
	buf     string
	fence   string // the open code fence ("" outside one)
	table   bool   // the held lines are a table
	held    int    // bytes of buf already scanned into the held block
	blank   bool   // the last thing printed was a blank line
	printed bool   // anything printed yet
}

// newRenderer is glamour's renderer of style (dark, light, notty, …) at
// width columns, as the function a markdown renders with. A block that
// does not render is shown as it is.
func newRenderer(style string, width int) func(string) string {
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(20, width-4)))
	return func(md string) string {
		if err != nil {
			return md
		}
		out, rerr := r.Render(md)
		if rerr != nil {
			return md
		}
		return out
	}
}

// add takes the next chunk of the message and returns what is ready to
// print.
func (m *markdown) add(text string) string {
	m.buf += text
	var out strings.Builder
	for {
		nl := strings.IndexByte(m.buf[m.held:], '\n')
		if nl < 0 {
			return out.String()
		}
		start, end := m.held, m.held+nl+1
		line := strings.TrimSpace(m.buf[start:end])
		switch {
		case m.fence != "":
			m.held = end
			if strings.HasPrefix(line, m.fence) {
				m.fence = ""
				out.WriteString(m.emit(end))
			}
		case strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~"):
			if m.table {
				out.WriteString(m.emit(start))
				continue
			}
			m.fence, m.held = line[:3], end
		case strings.HasPrefix(line, "|"):
			m.table, m.held = true, end
		case m.table:
			m.table = false
			out.WriteString(m.emit(start))
		default:
			out.WriteString(m.emit(end))
		}
	}
}

// end returns the rest of the message, rendered.
func (m *markdown) end() string {
	m.fence, m.table = "", false
	return m.emit(len(m.buf))
}

// emit renders buf[:n] as one block and keeps the rest.
func (m *markdown) emit(n int) string {
	block := m.buf[:n]
	m.buf, m.held = m.buf[n:], 0
	if strings.TrimSpace(block) == "" {
		if block == "" || m.blank || !m.printed {
			return ""
		}
		m.blank = true
		return "\n"
	}
	lines := strings.Split(m.render(block), "\n")
	for len(lines) > 0 && visible(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && visible(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	m.blank, m.printed = false, true
	return strings.Join(lines, "\n") + "\n"
}

// ansi matches terminal escape sequences (colours, styles).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)`)

// visible is s without escape sequences and surrounding space.
func visible(s string) string {
	return strings.TrimSpace(ansi.ReplaceAllString(s, ""))
}
