package acp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// windowHandler records the updates inbound hands over and decides when to
// give their credits back.
type windowHandler struct {
	mu    sync.Mutex
	texts []string
	held  []func()
	// release gives each credit back at once; otherwise credits are held.
	release bool
	// doubleDone calls done twice (the second call must free nothing).
	doubleDone bool
	// stopAfter closes stop once that many updates arrived (0: never).
	stopAfter int
	stop      chan struct{}
}

func (h *windowHandler) Update(u Update, done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.texts = append(h.texts, u.Text)
	switch {
	case h.doubleDone && len(h.texts) == 1:
		done()
		done()
	case h.release:
		done()
	default:
		h.held = append(h.held, done)
	}
	if h.stopAfter > 0 && len(h.texts) == h.stopAfter {
		close(h.stop)
	}
}

func (h *windowHandler) RequestPermission(context.Context, PermissionRequest) (PermissionOutcome, error) {
	return PermissionOutcome{Cancelled: true}, nil
}

func chunkLine(text string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` +
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + text + `"}}}}` + "\n"
}

const (
	responseLine  = `{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}` + "\n"
	requestLine   = `{"jsonrpc":"2.0","id":"r1","method":"fs/read_text_file","params":{"sessionId":"s","path":"/x"}}` + "\n"
	cancelReqLine = `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}` + "\n"
	extNotifLine  = `{"jsonrpc":"2.0","method":"_auth/refresh","params":{}}` + "\n"
	elicitLine    = `{"jsonrpc":"2.0","method":"elicitation/complete","params":{}}` + "\n"
	unknownKind   = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tether_unknown"}}}` + "\n"
	badParamsLine = `{"jsonrpc":"2.0","method":"session/update","params":"not an object"}` + "\n"
	garbageLine   = "this is not json\n"
)

func TestInboundWindow(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", maxLineBytes) + `"}` + "\n"
	tests := []inboundCase{
		{name: "update consumed, response passed", window: 4, handler: windowHandler{release: true},
			input: chunkLine("a") + responseLine, wantTexts: []string{"a"}, wantPassed: responseLine},
		{name: "requests and cancellations pass", window: 4, handler: windowHandler{release: true},
			input: requestLine + cancelReqLine, wantPassed: requestLine + cancelReqLine},
		{name: "notifications the daemon does not implement are dropped", window: 1,
			input: extNotifLine + elicitLine + extNotifLine + responseLine, wantPassed: responseLine},
		{name: "unknown update kinds take no credit", window: 1, handler: windowHandler{},
			input: unknownKind + unknownKind + chunkLine("a") + responseLine, wantTexts: []string{"a"}, wantPassed: responseLine},
		{name: "updates that do not decode are dropped", window: 1,
			input: badParamsLine + responseLine, wantPassed: responseLine},
		{name: "lines that are not JSON-RPC pass to the SDK", window: 1,
			input: garbageLine + "\n", wantPassed: garbageLine + "\n"},
		{name: "returned credits let reading go on", window: 1, handler: windowHandler{release: true},
			input: chunkLine("a") + chunkLine("b") + chunkLine("c") + responseLine, wantTexts: []string{"a", "b", "c"}, wantPassed: responseLine},
		{name: "a full window stops reading", window: 2, handler: windowHandler{stopAfter: 2},
			input: chunkLine("a") + chunkLine("b") + chunkLine("c") + responseLine, wantTexts: []string{"a", "b"}, wantErr: errStopped},
		{name: "a second done frees nothing", window: 1, handler: windowHandler{doubleDone: true, stopAfter: 2},
			input: chunkLine("a") + chunkLine("b") + chunkLine("c"), wantTexts: []string{"a", "b"}, wantErr: errStopped},
		{name: "the last line may lack its newline", window: 1,
			input: strings.TrimSuffix(responseLine, "\n"), wantPassed: strings.TrimSuffix(responseLine, "\n")},
		{name: "an over-long line ends the connection", window: 1,
			input: responseLine + long, wantPassed: responseLine, wantErr: errLineTooLong},
	}
	for _, lines := range []bool{false, true} {
		for i := range tests {
			tt := &tests[i]
			name := tt.name
			if lines {
				name += " (lines forwarded, decoded by an UpdateDecoder)"
			}
			t.Run(name, func(t *testing.T) { runInboundCase(t, tt, lines) })
		}
	}
}

// lineHandler takes updates as lines, as an executor host does: it holds
// them back until Flush, then decodes them as the daemon does and hands
// them on with a window of its own, so that the outcome can be held
// against the decoded path's. Like the host's, its Flush blocks while its
// window is full (until stop).
type lineHandler struct {
	*windowHandler
	dec     UpdateDecoder
	held    [][]byte
	credits chan struct{}
	maxHeld int // the most lines held at a Flush
}

func (h *lineHandler) UpdateLine(line []byte) {
	if bytes.HasSuffix(line, []byte("\n")) {
		panic("line handed over with its line end")
	}
	h.held = append(h.held, bytes.Clone(line))
	h.maxHeld = max(h.maxHeld, len(h.held))
}

func (h *lineHandler) Flush() {
	held := h.held
	h.held = nil
	for _, l := range held {
		u, ok := h.dec.Decode(l)
		if !ok {
			continue
		}
		select {
		case h.credits <- struct{}{}:
		case <-h.stop:
			return
		}
		var once sync.Once
		h.Update(u, func() { once.Do(func() { <-h.credits }) })
	}
}

// inboundCase is one row of TestInboundWindow: want* are the updates
// handed over, the bytes passed to the SDK and the error that ends
// reading (nil: io.EOF).
type inboundCase struct {
	name       string
	window     int
	handler    windowHandler
	input      string
	wantTexts  []string
	wantPassed string
	wantErr    error
}

func runInboundCase(t *testing.T, tt *inboundCase, lines bool) {
	t.Helper()
	// A fresh handler of the row's settings for each run.
	h := &windowHandler{release: tt.handler.release, doubleDone: tt.handler.doubleDone,
		stopAfter: tt.handler.stopAfter, stop: make(chan struct{})}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	var handler Handler = h
	var lh *lineHandler
	if lines {
		lh = &lineHandler{windowHandler: h, dec: UpdateDecoder{Logger: discard}, credits: make(chan struct{}, tt.window)}
		handler = lh
	}
	in := newInbound(strings.NewReader(tt.input), handler, tt.window, h.stop, discard)
	var passed bytes.Buffer
	buf := make([]byte, 17) // small, so lines are returned in pieces
	var err error
	for {
		var n int
		n, err = in.Read(buf)
		passed.Write(buf[:n])
		if err != nil {
			break
		}
	}
	want := tt.wantErr
	if want == nil {
		want = io.EOF
	}
	if !errors.Is(err, want) {
		t.Errorf("got error %v, want %v", err, want)
	}
	if got := passed.String(); got != tt.wantPassed {
		t.Errorf("got passed %.200q, want %.200q", got, tt.wantPassed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Join(h.texts, ",") != strings.Join(tt.wantTexts, ",") {
		t.Errorf("got updates %q, want %q", h.texts, tt.wantTexts)
	}
	if lh != nil && lh.maxHeld > tt.window {
		t.Errorf("got %d lines held at a Flush, want at most the window, %d", lh.maxHeld, tt.window)
	}
}

// TestInboundHeldCreditsResume checks the other half of back-pressure: a
// reader that waits for a credit goes on as soon as one comes back.
func TestInboundHeldCreditsResume(t *testing.T) {
	h := &windowHandler{stop: make(chan struct{})}
	input := chunkLine("a") + chunkLine("b") + responseLine
	in := newInbound(strings.NewReader(input), h, 1, h.stop, slog.New(slog.NewTextHandler(io.Discard, nil)))
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(in)
		got <- string(b)
	}()
	// "b" needs the credit "a" holds; give it back once "a" has arrived.
	for {
		h.mu.Lock()
		if len(h.held) == 1 {
			done := h.held[0]
			h.mu.Unlock()
			done()
			break
		}
		h.mu.Unlock()
		runtime.Gosched()
	}
	if s := <-got; s != responseLine {
		t.Errorf("got passed %q, want %q", s, responseLine)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Join(h.texts, ",") != "a,b" {
		t.Errorf("got updates %q, want a,b", h.texts)
	}
}
