package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tether/tether/client"
)

// attachCmd puts a session live in the terminal (attach.go, screen.go).
func attachCmd(g *globals) *cobra.Command {
	var last int
	var style string
	c := &cobra.Command{
		Use:   "attach SESSION",
		Short: "Follow a session live: the reply as Markdown, a line typed is a prompt",
		Long: `Attach to SESSION in the terminal: its latest turns (--last), then every
reply as it streams, rendered as Markdown, tool calls and plans on one line
each. Type a line and Enter to prompt. While a permission request waits, a
digit key on an empty line picks that option. Ctrl-C cancels the running
turn (with no turn running it clears the line, and on an empty line
detaches); Ctrl-D on an empty line detaches. A daemon restart or a dropped
connection is waited out and the stream resumes where it broke, so nothing
is shown twice or left out. Detaching leaves the session running.`,
		Args: args(1, 1),
		RunE: func(cmd *cobra.Command, a []string) error {
			d, err := g.dial()
			if err != nil {
				return err
			}
			return runAttach(cmd.Context(), d, a[0], last, style)
		},
	}
	c.Flags().IntVar(&last, "last", 3, "show this many of the latest turns first (0: all)")
	c.Flags().StringVar(&style, "style", "auto", "Markdown style: dark, light, notty or auto (notty when NO_COLOR is set or stdout is no terminal)")
	return c
}

// streamItem is what the stream goroutine hands the screen: an event, a
// break (err set, the stream waits and resumes), or the stream's end.
type streamItem struct {
	ev    client.Event
	snap  *client.Transcript
	err   error
	wait  time.Duration
	ended bool
}

// runAttach runs the attached screen until the user detaches or the
// session is over.
func runAttach(ctx context.Context, d *conn, id string, last int, style string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in, out := os.Stdin, os.Stdout
	tty := term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
	width := 80
	if w, _, err := term.GetSize(int(out.Fd())); err == nil && w > 0 {
		width = w
	}
	if style == "auto" {
		style = "dark"
		if os.Getenv("NO_COLOR") != "" || !term.IsTerminal(int(out.Fd())) {
			style = "notty"
		}
	}
	// Only the turns shown: a long session's whole transcript is megabytes.
	var page client.GetTranscriptParams
	if last > 0 {
		page.Limit = &last
	}
	snap, err := call(d.api.GetTranscriptWithResponse(ctx, id, &page))
	if err != nil {
		return err
	}
	var w io.Writer = out
	if tty {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return err
		}
		defer term.Restore(int(in.Fd()), old)
		w = crlf{out}
	}
	sc := newScreen(w, tty, style != "notty" && os.Getenv("NO_COLOR") == "", newRenderer(style, width), id)
	sc.snapshot(snap.JSON200, last)

	items := make(chan streamItem)
	go func() {
		s := client.SessionStream(d.addr, d.token, id, snap.JSON200.Cursor)
		s.OnBreak = func(err error, wait time.Duration) {
			select {
			case items <- streamItem{err: err, wait: wait}:
			case <-ctx.Done():
			}
		}
		err := s.Run(ctx, func(e client.Event) error {
			select {
			case items <- streamItem{ev: e}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		select {
		case items <- streamItem{err: err, ended: true}:
		case <-ctx.Done():
		}
	}()
	keys := make(chan key, 16)
	go readKeys(in, tty, keys)
	for {
		select {
		case it := <-items:
			if it.ended {
				if it.err != nil && !errors.Is(it.err, context.Canceled) {
					sc.finish()
					return authErr(it.err)
				}
				sc.note("the session is closed")
				sc.finish()
				return nil
			}
			if it.err != nil {
				sc.broken(it.err, it.wait)
				continue
			}
			sc.event(it.ev)
		case k, ok := <-keys:
			if !ok {
				sc.finish()
				return nil
			}
			act := sc.key(k)
			if act.detach {
				sc.finish()
				return nil
			}
			if act.prompt != "" || act.cancel || act.answer != nil {
				go sc.send(ctx, d, act)
			}
		case msg := <-sc.notes:
			sc.note(msg)
		case <-ctx.Done():
			sc.finish()
			return nil
		}
	}
}

// action is what a key asks of the daemon.
type action struct {
	prompt string
	cancel bool
	answer *answerAct
	detach bool
}

// answerAct answers a permission request.
type answerAct struct {
	request, option string
}

// send carries an action out against the daemon, off the screen's loop;
// a failure is shown as a note.
func (s *screen) send(ctx context.Context, d *conn, act action) {
	var err error
	switch {
	case act.prompt != "":
		id := uuid.NewString()
		_, err = call(d.api.PromptSessionWithResponse(ctx, s.id, client.PromptRequest{Prompt: textPrompt(act.prompt), PromptId: &id}))
	case act.cancel:
		keep := true // Ctrl-C stops the answer, not the prompts queued after it (as Esc in the Web Shell)
		_, err = call(d.api.CancelSessionWithResponse(ctx, s.id, &client.CancelSessionParams{KeepQueue: &keep}))
	case act.answer != nil:
		err = d.answer(ctx, s.id, act.answer.request, act.answer.option)
	}
	if err != nil && ctx.Err() == nil {
		select {
		case s.notes <- err.Error():
		case <-ctx.Done():
		}
	}
}

// key is one key pressed: a rune, or a control key.
type key struct {
	r    rune
	ctrl byte // 'C' for Ctrl-C, 'D', 'U', '\r' Enter, 0x7f Backspace; 0 for a rune
	line string
}

// readKeys reads keys from in until it ends: raw bytes from a terminal
// (escape sequences such as arrows are skipped), or whole lines, each
// one Enter, from a pipe.
func readKeys(in io.Reader, tty bool, keys chan<- key) {
	defer close(keys)
	if !tty {
		buf := make([]byte, 4096)
		var pending string
		for {
			n, err := in.Read(buf)
			pending += string(buf[:n])
			for {
				i := strings.IndexByte(pending, '\n')
				if i < 0 {
					break
				}
				keys <- key{ctrl: '\r', line: pending[:i]}
				pending = pending[i+1:]
			}
			if err != nil {
				return
			}
		}
	}
	var b [64]byte
	var rest []byte
	for {
		n, err := in.Read(b[:])
		rest = append(rest, b[:n]...)
		for len(rest) > 0 {
			c := rest[0]
			switch {
			case c == 0x1b: // an escape sequence: skip it whole
				i := 1
				if len(rest) > 1 && (rest[1] == '[' || rest[1] == 'O') {
					i = 2
					for i < len(rest) && !(rest[i] >= 0x40 && rest[i] <= 0x7e) {
						i++
					}
					i = min(i+1, len(rest))
				}
				rest = rest[i:]
				continue
			case c == 3:
				keys <- key{ctrl: 'C'}
			case c == 4:
				keys <- key{ctrl: 'D'}
			case c == 0x15:
				keys <- key{ctrl: 'U'}
			case c == '\r' || c == '\n':
				keys <- key{ctrl: '\r'}
			case c == 0x7f || c == 8:
				keys <- key{ctrl: 0x7f}
			case c < 0x20:
			default:
				r, size := decodeRune(rest)
				if size == 0 {
					goto more // an incomplete UTF-8 sequence: wait for the rest
				}
				keys <- key{r: r}
				rest = rest[size:]
				continue
			}
			rest = rest[1:]
		}
	more:
		if err != nil {
			return
		}
	}
}

// crlf writes to a terminal in raw mode, where a newline must be \r\n.
type crlf struct{ w io.Writer }

func (c crlf) Write(p []byte) (int, error) {
	_, err := c.w.Write([]byte(strings.ReplaceAll(string(p), "\n", "\r\n")))
	return len(p), err
}

// decodeRune is the rune rest starts with; size 0 when rest holds only
// its beginning.
func decodeRune(rest []byte) (rune, int) {
	if !utf8.FullRune(rest) {
		return 0, 0
	}
	return utf8.DecodeRune(rest)
}
