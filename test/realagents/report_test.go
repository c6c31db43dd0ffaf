package realagents_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tether/tether/internal/modelserver"
)

// TestRecoveryReportAfterWriteThenKill: the model has the agent write a
// file (the user allows it), then stalls mid-reply; the agent is killed
// with SIGKILL (its process group). The recovery report lists the file as
// the turn's one change and the write as a finished tool call, and the
// continuation prompt the model receives names the file, so it can check
// instead of writing it again.
func TestRecoveryReportAfterWriteThenKill(t *testing.T) {
	const content = "written before the stall\n"
	const rest = "FINAL: checked the file, all done."
	forEachAgent(t, func(t *testing.T, a agent) {
		gate := modelserver.NewGate()
		t.Cleanup(gate.Release)
		w := newWorld(t, a, nil)
		path := filepath.Join(w.cwd, "notes.txt")
		w.model.SetScript(modelserver.WriteThenStall(path, content, "I will write notes.txt.", "Wrote it; now explaining slowly, word by word.", 3, gate))
		sid := w.createSession()
		w.prompt(sid, "Write notes.txt, then explain.", "p1")
		var req map[string]any
		w.waitFor("the agent's permission request", func() bool {
			if p := list(w.transcript(sid), "pendingPermissions"); len(p) == 1 {
				req = p[0]
			}
			return req != nil
		})
		option := ""
		for _, o := range list(req, "options") {
			if o["kind"] == "allow_once" && option == "" {
				option, _ = o["optionId"].(string)
			}
		}
		if st, body := w.do("POST", "/session/"+sid+"/permission/"+req["id"].(string), map[string]any{"optionId": option}); st != http.StatusOK {
			t.Fatalf("answer: got %d %v, want 200", st, body)
		}
		waitStalled(t, gate)
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("notes.txt before the kill: got %q, %v", b, err)
		}
		_, sess := w.do("GET", "/session/"+sid, nil)
		exec, _ := sess["executor"].(map[string]any)
		pid, _ := exec["pid"].(float64)
		if pid <= 1 {
			t.Fatalf("no agent pid in %v", exec)
		}
		if err := syscall.Kill(-int(pid), syscall.SIGKILL); err != nil {
			t.Fatalf("kill agent group %d: %v", int(pid), err)
		}
		if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
			t.Fatalf("turn after the agent died: got %v, want interrupted", turn["state"])
		}
		var report map[string]any
		w.waitFor("the recovery report's workspace part", func() bool {
			_, ctx := w.do("GET", "/session/"+sid+"/context", nil)
			rec, _ := ctx["recovery"].(map[string]any)
			report, _ = rec["report"].(map[string]any)
			return report != nil && report["workspace"] != nil
		})
		ws := report["workspace"].(map[string]any)
		var files []string
		for _, f := range list(ws, "files") {
			files = append(files, f["path"].(string)+" "+f["status"].(string))
		}
		if len(files) != 1 || files[0] != "notes.txt added" || ws["error"] != nil {
			t.Errorf("changed files: got %v (error %v), want exactly notes.txt added", files, ws["error"])
		}
		wrote := false
		for _, c := range list(report, "toolCalls") {
			wrote = wrote || (c["finished"] == true && c["status"] == "completed" && c["kind"] == "edit")
		}
		if !wrote {
			t.Errorf("tool calls: got %v, want the write, finished", report["toolCalls"])
		}

		w.model.SetScript(modelserver.Say(rest))
		w.continueTurn(sid, "c1")
		reqs := mainRequests(w.model)
		if last := reqs[len(reqs)-1].LastUser().Text(); !strings.Contains(last, "Files changed in the workspace since this turn began: notes.txt (added).") {
			t.Errorf("the model's last user turn does not name the changed file:\n%s", last)
		}
		if got := agentText(w.transcript(sid), "c1"); !strings.Contains(got, rest) {
			t.Errorf("continuation's agent text: got %q, want %q", got, rest)
		}
	})
}
