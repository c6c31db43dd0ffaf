package crash_test

import (
	"net/http"
	"strings"
	"testing"
)

// commandRecord is what a session's durable log says of one command.
type commandRecord struct {
	// out is its output in order; the offsets of its command.output
	// events are contiguous (the record checks), a truncation aside.
	out string
	// truncated are its command.truncated events' payloads, exited its
	// command.exited's (nil while it runs).
	truncated []map[string]any
	exited    map[string]any
}

// commandRecordOf reads command id's record from the session's durable
// log (GET events?follow=false).
func (w *world) commandRecordOf(sid, id string) commandRecord {
	w.t.Helper()
	var r commandRecord
	var next float64
	for _, f := range w.replay(sid) {
		p := f.JSON(w.t)
		if p["commandId"] != id {
			continue
		}
		switch f.Event {
		case "command.output":
			if p["offset"] != next {
				w.t.Errorf("command.output at offset %v, want %v (a gap or a repeat)", p["offset"], next)
			}
			r.out += p["text"].(string)
			next = p["offset"].(float64) + float64(len(p["text"].(string)))
		case "command.truncated":
			r.truncated = append(r.truncated, p)
			if p["reason"] == "overrun" {
				next = p["offset"].(float64) + p["bytes"].(float64)
			}
		case "command.exited":
			r.exited = p
		}
	}
	return r
}

// commandLog is what a session's durable log says of command id: its
// output in order (offsets contiguous) and how it ended.
func (w *world) commandLog(sid, id string) (out string, exited map[string]any) {
	w.t.Helper()
	r := w.commandRecordOf(sid, id)
	return r.out, r.exited
}

// TestCommands, on both runtimes: a command's output (stdout and stderr)
// is recorded as command.output events in order and its exit code as
// command.exited and in GET /commands. On the detached runtime a command
// running while tetherd is killed with SIGKILL runs on on the host, and the
// restarted daemon records the rest of its output, once, and its exit; a
// standalone command dies with tetherd and ends lost.
func TestCommands(t *testing.T) {
	for _, runtime := range []string{"standalone", "detached"} {
		t.Run(runtime, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.start("--executor", runtime)
			sid, _ := w.createSession("demo")
			code, c := w.do(http.MethodPost, "/session/"+sid+"/commands", map[string]any{"command": "echo out; echo err >&2; pwd; exit 5"})
			// A command this short may have ended by the time the answer
			// reads its row back.
			if code != http.StatusAccepted || (c["state"] != "running" && c["state"] != "exited") {
				t.Fatalf("run: got %d %v", code, c)
			}
			id := c["id"].(string)
			w.waitFor("the command's exit", func() bool {
				for _, x := range list(w.get("/session/"+sid+"/commands"), "commands") {
					if x["id"] == id && x["state"] == "exited" {
						return x["exitCode"] == float64(5)
					}
				}
				return false
			})
			out, exited := w.commandLog(sid, id)
			if out != "out\nerr\n"+w.get("/session/" + sid)["cwd"].(string)+"\n" || exited["exitCode"] != float64(5) || exited["state"] != "exited" {
				t.Errorf("log: got output %q, exit %v", out, exited)
			}

			// Multi-byte text over many reads: no character is cut in two.
			code, c = w.do(http.MethodPost, "/session/"+sid+"/commands", map[string]any{"command": "yes 中文 | head -n 30000"})
			if code != http.StatusAccepted {
				t.Fatalf("run: got %d %v", code, c)
			}
			wide := c["id"].(string)
			w.waitFor("the wide command's end", func() bool { _, e := w.commandLog(sid, wide); return e != nil })
			if out, _ := w.commandLog(sid, wide); out != strings.Repeat("中文\n", 30000) {
				t.Errorf("wide output: got %d bytes (%d replacement characters), want %d bytes of 中文 lines",
					len(out), strings.Count(out, "\uFFFD"), 30000*7)
			}

			code, c = w.do(http.MethodPost, "/session/"+sid+"/commands", map[string]any{"command": "echo before; sleep 2; echo after"})
			if code != http.StatusAccepted {
				t.Fatalf("run: got %d %v", code, c)
			}
			long := c["id"].(string)
			w.waitFor("the first line", func() bool { o, _ := w.commandLog(sid, long); return strings.Contains(o, "before") })
			w.kill9()
			w.start("--executor", runtime)
			want := map[string]any{"standalone": "lost", "detached": "exited"}[runtime]
			w.waitFor("the long command's end", func() bool {
				_, e := w.commandLog(sid, long)
				return e != nil
			})
			out, exited = w.commandLog(sid, long)
			if exited["state"] != want {
				t.Errorf("after kill -9 of tetherd: got %v, want %s", exited, want)
			}
			if runtime == "detached" && (out != "before\nafter\n" || exited["exitCode"] != float64(0)) {
				t.Errorf("detached: got output %q exit %v, want before and after once, exit 0", out, exited["exitCode"])
			}
		})
	}
}
