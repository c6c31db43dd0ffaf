package crash_test

import (
	"bytes"
	"context"
	byteorder "encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// termSocket is a client of a terminal's WebSocket: it collects the
// output by offset, as the Web Shell and the SDK do.
type termSocket struct {
	t      testing.TB
	c      *websocket.Conn
	hello  int64
	out    bytes.Buffer
	end    int64
	exited *int
	// frames come from one reader goroutine: a read cut by a timeout
	// would close the connection.
	frames chan frameIn
}

type frameIn struct {
	typ  websocket.MessageType
	data []byte
	err  error
}

// next is the next frame, or a failure after d.
func (s *termSocket) next(d time.Duration) (websocket.MessageType, []byte, error) {
	select {
	case f := <-s.frames:
		return f.typ, f.data, f.err
	case <-time.After(d):
		return 0, nil, fmt.Errorf("no frame in %v", d)
	}
}

func (w *world) openTerminal(sid string) string {
	w.t.Helper()
	code, m := w.do(http.MethodPost, "/session/"+sid+"/terminals", map[string]any{"cols": 100, "rows": 30})
	if code != http.StatusCreated {
		w.t.Fatalf("open terminal: got %d %v", code, m)
	}
	return m["id"].(string)
}

func (w *world) attach(t testing.TB, sid, tid string, offset int64) *termSocket {
	t.Helper()
	return attachTerminal(t, w.addr, sid, tid, offset)
}

// attachTerminal opens a terminal's WebSocket at tetherd addr and reads
// its hello.
func attachTerminal(t testing.TB, addr, sid, tid string, offset int64) *termSocket {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, fmt.Sprintf("ws://%s/session/%s/terminals/%s/ws?offset=%d", addr, sid, tid, offset),
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("attach: %v (%v)", err, resp)
	}
	c.SetReadLimit(4 << 20)
	s := &termSocket{t: t, c: c, end: offset}
	typ, b, err := c.Read(ctx)
	var hello struct {
		Type   string `json:"type"`
		Offset int64  `json:"offset"`
	}
	if err != nil || typ != websocket.MessageText || json.Unmarshal(b, &hello) != nil || hello.Type != "hello" {
		t.Fatalf("first frame: got %v %q %v, want hello", typ, b, err)
	}
	s.hello, s.end = hello.Offset, hello.Offset
	s.frames = make(chan frameIn, 1024)
	go func() {
		for {
			typ, b, err := c.Read(context.Background())
			s.frames <- frameIn{typ, b, err}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// until reads frames until the output holds want (or the shell exits).
func (s *termSocket) until(want string) {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(s.out.String(), want) {
		typ, b, err := s.next(time.Until(deadline))
		if err != nil {
			s.t.Fatalf("waiting for %q: %v; output so far:\n%s", want, err, s.out.String())
		}
		s.take(typ, b)
		if s.exited != nil && !strings.Contains(s.out.String(), want) {
			s.t.Fatalf("the shell exited (%d) before %q", *s.exited, want)
		}
	}
}

func (s *termSocket) take(typ websocket.MessageType, b []byte) {
	s.t.Helper()
	if typ == websocket.MessageText {
		var m struct {
			Type     string `json:"type"`
			ExitCode *int   `json:"exitCode"`
		}
		if json.Unmarshal(b, &m) == nil && m.Type == "exit" {
			s.exited = m.ExitCode
		}
		return
	}
	off := int64(byteorder.BigEndian.Uint64(b))
	if off != s.end {
		s.t.Fatalf("output frame at offset %d, want %d (a gap or an overlap)", off, s.end)
	}
	s.out.Write(b[8:])
	s.end += int64(len(b) - 8)
}

func (s *termSocket) typeText(text string) {
	s.t.Helper()
	if err := s.c.Write(context.Background(), websocket.MessageBinary, []byte(text)); err != nil {
		s.t.Fatal(err)
	}
}

// TestTerminal, on both runtimes: a shell on a PTY in the session's
// directory, typed into and read back over the WebSocket; a reconnect with
// offset 0 gets the whole output again, one with the offset reached misses
// nothing and repeats nothing; the shell's exit code is recorded. On the
// detached runtime the terminal survives kill -9 of tetherd: the same
// shell answers after the restart.
func TestTerminal(t *testing.T) {
	for _, runtime := range []string{"standalone", "detached"} {
		t.Run(runtime, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.start("--executor", runtime)
			sid, cwd := w.createSession("demo")
			tid := w.openTerminal(sid)
			s := w.attach(t, sid, tid, 0)
			s.typeText("echo hi-$((6*7)); pwd\n")
			s.until("hi-42")
			s.until(cwd)
			// Quotes split the markers, so that the echo of the typed line
			// never matches: only the shell's output does.
			s.typeText("echo \"P\"\"ID=$$.\"\n")
			s.until("PID=")
			s.until(".")
			rest := s.out.String()[strings.LastIndex(s.out.String(), "PID=")+4:]
			pid := rest[:strings.Index(rest, ".")]
			if err := s.c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"resize","cols":132,"rows":40}`)); err != nil {
				t.Fatal(err)
			}
			s.typeText("stty size\n")
			s.until("40 132")
			reached := s.end
			s.c.Close(websocket.StatusNormalClosure, "")

			// A browser reload: from 0 the whole output again; from where it
			// was, only what came after.
			again := w.attach(t, sid, tid, 0)
			again.until("40 132")
			if !strings.HasPrefix(again.out.String(), s.out.String()[:reached-s.hello]) {
				t.Errorf("the output read again differs from the first reading")
			}
			again.c.Close(websocket.StatusNormalClosure, "")

			if runtime == "detached" {
				w.kill9()
				w.start("--executor", runtime)
			}
			after := w.attach(t, sid, tid, reached)
			if after.hello != reached {
				t.Errorf("reattached at %d, want %d", after.hello, reached)
			}
			after.typeText("echo \"A\"\"GAIN=$$.\"\n")
			after.until("AGAIN=" + pid + ".")
			after.typeText("exit 3\n")
			for after.exited == nil {
				typ, b, err := after.next(10 * time.Second)
				if err != nil {
					t.Fatalf("waiting for the exit: %v", err)
				}
				after.take(typ, b)
			}
			if *after.exited != 3 {
				t.Errorf("exit code: got %d, want 3", *after.exited)
			}
			var found bool
			for _, term := range list(w.get("/session/"+sid+"/terminals"), "terminals") {
				if term["id"] == tid {
					found = true
					if term["exited"] != true || term["exitCode"] != float64(3) {
						t.Errorf("terminal after exit: got %v, want exited with code 3", term)
					}
				}
			}
			if !found {
				t.Errorf("the exited terminal is not listed")
			}
			if code, m := w.do(http.MethodDelete, "/session/"+sid+"/terminals/"+tid, nil); code != http.StatusOK {
				t.Errorf("close: got %d %v", code, m)
			}
			if code, m := w.do(http.MethodGet, "/session/"+sid+"/terminals/"+tid+"/output", nil); code != http.StatusNotFound || m["code"] != "terminal_not_found" {
				t.Errorf("output of a closed terminal: got %d %v, want 404 terminal_not_found", code, m)
			}
		})
	}
}

// TestTerminalREST: the same without a WebSocket (curl): type, read by
// offset with a wait; refusals are problem+json; --terminal=false
// switches terminals off.
func TestTerminalREST(t *testing.T) {
	w := newWorld(t, profile{id: "demo"})
	w.start()
	sid, _ := w.createSession("demo")
	tid := w.openTerminal(sid)
	if code, m := w.do(http.MethodPost, "/session/"+sid+"/terminals/"+tid+"/input", map[string]any{"text": "echo rest-$((40+2))\n"}); code != http.StatusNoContent {
		t.Fatalf("input: got %d %v", code, m)
	}
	// A read that waits and gets nothing answers data "" (a string, as the
	// contract says), never null: read from the end until a read brings
	// nothing new.
	for end := float64(0); ; {
		m := w.get(fmt.Sprintf("/session/%s/terminals/%s/output?offset=%d&wait=50", sid, tid, int64(end)))
		if m["end"] == end {
			if d, ok := m["data"].(string); !ok || d != "" {
				t.Fatalf("a read with no output: got data %#v, want \"\"", m["data"])
			}
			break
		}
		end = m["end"].(float64)
	}
	var out strings.Builder
	var off float64
	w.waitFor("the echo over REST", func() bool {
		m := w.get(fmt.Sprintf("/session/%s/terminals/%s/output?offset=%d&wait=1000", sid, tid, int64(off)))
		var data []byte
		s, _ := m["data"].(string)
		_ = json.Unmarshal([]byte(`"`+s+`"`), &data)
		out.Write(data)
		off = m["end"].(float64)
		return strings.Contains(out.String(), "rest-42")
	})
	for _, c := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"unknown terminal", http.MethodGet, "/session/" + sid + "/terminals/nope/output", nil, http.StatusNotFound, "terminal_not_found"},
		{"offset past the end", http.MethodGet, "/session/" + sid + "/terminals/" + tid + "/output?offset=99999999", nil, http.StatusBadRequest, "invalid_request"},
		{"empty input", http.MethodPost, "/session/" + sid + "/terminals/" + tid + "/input", map[string]any{"text": ""}, http.StatusBadRequest, "validation_failed"},
		{"too large", http.MethodPost, "/session/" + sid + "/terminals", map[string]any{"cols": 5000}, http.StatusBadRequest, "validation_failed"},
		{"unknown session", http.MethodGet, "/session/nope/terminals", nil, http.StatusNotFound, "session_not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if code, m := w.do(c.method, c.path, c.body); code != c.status || m["code"] != c.code {
				t.Errorf("got %d %v, want %d %s", code, m, c.status, c.code)
			}
		})
	}

	off2 := newWorld(t, profile{id: "demo"})
	off2.start("--terminal=false")
	sid2, _ := off2.createSession("demo")
	if code, m := off2.do(http.MethodPost, "/session/"+sid2+"/terminals", nil); code != http.StatusForbidden || m["code"] != "terminal_disabled" {
		t.Errorf("with --terminal=false: got %d %v, want 403 terminal_disabled", code, m)
	}
}
