package crash_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// commandRow is command id of GET /session/{sid}/commands, nil if absent.
func (w *world) commandRow(sid, id string) map[string]any {
	w.t.Helper()
	for _, c := range list(w.get("/session/"+sid+"/commands"), "commands") {
		if c["id"] == id {
			return c
		}
	}
	return nil
}

// runCommand starts command in session sid and returns its id.
func (w *world) runCommand(sid, command string) string {
	w.t.Helper()
	code, c := w.do(http.MethodPost, "/session/"+sid+"/commands", map[string]any{"command": command})
	if code != http.StatusAccepted {
		w.t.Fatalf("run %q: got %d %v, want 202", command, code, c)
	}
	return c["id"].(string)
}

// waitCommandEnd waits until command id of session sid has ended and
// returns its row.
func (w *world) waitCommandEnd(sid, id string) map[string]any {
	w.t.Helper()
	var row map[string]any
	w.waitFor("the command's end", func() bool {
		row = w.commandRow(sid, id)
		return row != nil && row["state"] != "running"
	})
	return row
}

// commandCase is a command whose output is `line` over and over, total
// bytes of it, and what of it the log must hold.
type commandCase struct {
	name    string
	line    string
	total   int
	exit    int
	kept    int    // bytes of it recorded
	reason  string // its command.truncated's reason ("" for none)
	limit   int    // and limit
	command string // "" for yes LINE | head -c TOTAL; exit EXIT
}

func (c commandCase) run() string {
	if c.command != "" {
		return c.command
	}
	return "yes " + strings.TrimSuffix(c.line, "\n") + " | head -c " + strconv.Itoa(c.total) + "; exit " + strconv.Itoa(c.exit)
}

// check compares command id's record and row with the case.
func (w *world) checkCommand(sid, id string, c commandCase) {
	w.t.Helper()
	row := w.waitCommandEnd(sid, id)
	r := w.commandRecordOf(sid, id)
	want := strings.Repeat(c.line, c.total/len(c.line)+1)[:c.kept]
	if r.out != want {
		w.t.Errorf("%s: log holds %d bytes of output, want the first %d of the %d it wrote, in order", c.name, len(r.out), c.kept, c.total)
	}
	dropped := float64(c.total - c.kept)
	if e := r.exited; e == nil || e["state"] != "exited" || e["exitCode"] != float64(c.exit) ||
		e["outputBytes"] != float64(c.kept) || e["droppedBytes"] != dropped {
		w.t.Errorf("%s: command.exited %v, want exit %d, outputBytes %d, droppedBytes %v", c.name, r.exited, c.exit, c.kept, dropped)
	}
	if row["exitCode"] != float64(c.exit) || row["outputBytes"] != float64(c.kept) || row["droppedBytes"] != dropped {
		w.t.Errorf("%s: GET commands: %v, want exit %d, outputBytes %d, droppedBytes %v", c.name, row, c.exit, c.kept, dropped)
	}
	switch {
	case c.reason == "":
		if len(r.truncated) != 0 || row["truncated"] != nil {
			w.t.Errorf("%s: truncated %v (row %v), want nothing left out", c.name, r.truncated, row["truncated"])
		}
	case len(r.truncated) != 1:
		w.t.Errorf("%s: command.truncated events %v, want one, %s", c.name, r.truncated, c.reason)
	default:
		if tr := r.truncated[0]; tr["offset"] != float64(c.kept) || tr["reason"] != c.reason || tr["limit"] != float64(c.limit) {
			w.t.Errorf("%s: command.truncated %v, want at offset %d, %s, limit %d", c.name, tr, c.kept, c.reason, c.limit)
		}
		if row["truncated"] != c.reason {
			w.t.Errorf("%s: GET commands says truncated %v, want %s", c.name, row["truncated"], c.reason)
		}
	}
}

// TestCommandOutputBounded, on every runtime: a command's output is
// recorded whole and in order however fast it comes (3 MB written at
// once, three times what the executor buffers), up to the command's
// limit and the session's; past a limit a command.truncated event says
// where the record stops and why, the rest is not stored, the command
// runs on to its exit code, and command.exited and GET /commands say how
// much was left out. On a host, a command that writes while tetherd is
// killed with SIGKILL is caught up after the restart, whole.
func TestCommandOutputBounded(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	const cmdLimit, sessionLimit = 4 << 20, 8 << 20
	limits := []string{"--command-output-limit", "4MiB", "--session-command-output-limit", "8MiB"}
	for _, rt := range allRuntimes("--terminal", "on") {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, restart := rt.start(t, w, limits...)
			sid, _ := w.createSessionOn("demo", executor)
			// In order: the session's limit counts what the ones before
			// recorded.
			for _, c := range []commandCase{
				{name: "3 MB at once, under the limits", line: "0123456789\n", total: 3_000_000, exit: 7, kept: 3_000_000},
				{name: "past the command's limit", line: "abcdefghij\n", total: 5_000_000, exit: 4, kept: cmdLimit, reason: "command_limit", limit: cmdLimit},
				{name: "past the session's limit", line: "ABCDEFGHIJ\n", total: 2_000_000, exit: 5,
					kept: sessionLimit - 3_000_000 - cmdLimit, reason: "session_limit", limit: sessionLimit},
				{name: "nothing left in the session", line: "tail\n", total: 5, exit: 6, kept: 0, reason: "session_limit", limit: sessionLimit,
					command: "echo tail; exit 6"},
			} {
				w.checkCommand(sid, w.runCommand(sid, c.run()), c)
			}
			if rt.name == "standalone" {
				return // a standalone command ends with tetherd (TestCommands)
			}

			// Output written while tetherd is down waits for it, on its
			// host, and is recorded once it is back.
			sid2, _ := w.createSessionOn("demo", executor)
			// 10-byte lines: the second 2 MB go on where the first ended.
			c := commandCase{name: "written across a kill -9 of tetherd", line: "012345678\n", total: 4_000_000, exit: 9, kept: 4_000_000,
				command: "yes 012345678 | head -c 2000000; sleep 2; yes 012345678 | head -c 2000000; exit 9"}
			id := w.runCommand(sid2, c.command)
			w.waitFor("the first 2 MB recorded", func() bool {
				row := w.commandRow(sid2, id)
				n, _ := row["outputBytes"].(float64)
				return n >= 2_000_000
			})
			w.kill9()
			restart()
			w.checkCommand(sid2, id, c)
		})
	}
}

// TestCommandRefusesNUL, on every runtime: a NUL byte cannot be in a
// command (no program's argument can hold one), so it is 400
// validation_failed, not a failure of the executor; the other inputs of
// the workspace answer a NUL byte as theirs (a path is invalid, a cwd
// too; typed into a terminal it is Ctrl-@, a key like any other).
func TestCommandRefusesNUL(t *testing.T) {
	for _, rt := range allRuntimes("--terminal", "on") {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			executor, _ := rt.start(t, w)
			sid, cwd := w.createSessionOn("demo", executor)
			tid := w.openTerminal(sid)
			for _, c := range []struct {
				name, method, path string
				body               any
				status             int
				code               string
			}{
				{"a command ending in NUL", http.MethodPost, "/session/" + sid + "/commands", map[string]any{"command": "ls\x00"}, http.StatusBadRequest, "validation_failed"},
				{"a command of one NUL", http.MethodPost, "/session/" + sid + "/commands", map[string]any{"command": "\x00"}, http.StatusBadRequest, "validation_failed"},
				{"a NUL inside a command", http.MethodPost, "/session/" + sid + "/commands", map[string]any{"command": "echo a\x00b"}, http.StatusBadRequest, "validation_failed"},
				{"a path with NUL", http.MethodGet, "/session/" + sid + "/workspace/file?path=README.md%00", nil, http.StatusBadRequest, "workspace_path_invalid"},
				{"a cwd with NUL", http.MethodPost, "/session", sessionBody("demo", executor, cwd+"\x00"), http.StatusBadRequest, "invalid_cwd"},
				{"NUL typed into a terminal", http.MethodPost, "/session/" + sid + "/terminals/" + tid + "/input", map[string]any{"text": "\x00"}, http.StatusNoContent, ""},
			} {
				code, m := w.do(c.method, c.path, c.body)
				if code != c.status || (c.code != "" && m["code"] != c.code) {
					t.Errorf("%s: got %d %v, want %d %s", c.name, code, m, c.status, c.code)
				}
			}
			id := w.runCommand(sid, "echo still here")
			if row := w.waitCommandEnd(sid, id); row["exitCode"] != float64(0) {
				t.Errorf("a command after the refusals: got %v", row)
			}
		})
	}
}
