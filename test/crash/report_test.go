package crash_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecoveryReportAfterAgentKill9MidTool: the demo agent's /work writes
// two files, runs `ls`, and is killed with SIGKILL (its process group, the
// running command included) during `sleep 3600`. On either runtime, the
// recovery report (GET /context and session.recovery_changed) lists
// exactly the files it wrote, HEAD unmoved, the finished tool calls with
// their output and the command still running; a diff against the turn's
// checkpoint shows the same; and the continuation prompt carries the
// short form, so the agent is told what it had done.
func TestRecoveryReportAfterAgentKill9MidTool(t *testing.T) {
	for _, runtime := range []string{"standalone", "detached"} {
		t.Run(runtime, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"})
			w.start("--executor", runtime)
			sid, cwd := w.createSession("demo")
			// Files that were there before the turn are not its changes.
			if err := os.WriteFile(filepath.Join(cwd, "before.txt"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			w.prompt(sid, "/work a.txt sub/b.txt", "p1")
			w.waitFor("the demo agent to run `sleep 3600`", func() bool {
				for _, c := range list(w.transcript(sid), "toolCalls") {
					if c["title"] == "Run `sleep 3600`" && c["status"] == "in_progress" {
						return true
					}
				}
				return false
			})
			agents := w.agentsIn(cwd)
			if len(agents) != 1 {
				t.Fatalf("agents in the session's directory: got %v, want one", agents)
			}
			if err := killGroup(agents[0].pid); err != nil {
				t.Fatal(err)
			}
			var report map[string]any
			w.waitFor("the recovery report to list the workspace's changes", func() bool {
				rec, _ := w.sessionContext(sid)["recovery"].(map[string]any)
				report, _ = rec["report"].(map[string]any)
				return report != nil && report["workspace"] != nil
			})
			checkReport(t, "context", report)

			// The same report reached the stream.
			var pushed map[string]any
			for _, f := range w.replay(sid) {
				if f.Event == "session.recovery_changed" {
					if r, _ := f.JSON(t)["recovery"].(map[string]any)["report"].(map[string]any); r != nil {
						pushed = r
					}
				}
			}
			checkReport(t, "session.recovery_changed", pushed)

			code, d := w.do(http.MethodGet, "/session/"+sid+"/workspace/git/diff?turn=p1&patch=true", nil)
			if code != http.StatusOK {
				t.Fatalf("diff against the turn's checkpoint: got %d %v", code, d)
			}
			if got := diffPaths(d); !slices.Equal(got, []string{"a.txt", "sub/b.txt"}) {
				t.Errorf("diff against turn p1: got files %v, want a.txt and sub/b.txt", got)
			}
			if d["headMoved"] != false || !strings.Contains(d["patch"].(string), "+written by the demo agent") {
				t.Errorf("diff against turn p1: got headMoved %v, patch %q", d["headMoved"], d["patch"])
			}

			code, m := w.do(http.MethodPost, "/session/"+sid+"/continue", map[string]any{"promptId": "c1"})
			if code != http.StatusAccepted {
				t.Fatalf("continue: got %d %v", code, m)
			}
			w.waitTurn(sid, "c1")
			// What tetherd sent: the continuation turn's prompt.
			code, turn := w.do(http.MethodGet, "/session/"+sid+"/turns/c1", nil)
			if code != http.StatusOK {
				t.Fatalf("turn c1: got %d %v", code, turn)
			}
			var sent string
			if blocks, _ := turn["prompt"].([]any); len(blocks) == 1 {
				sent, _ = blocks[0].(map[string]any)["text"].(string)
			}
			for _, want := range []string{
				"Files changed in the workspace since this turn began: a.txt (added), sub/b.txt (added).",
				"- Run `ls` (execute): completed",
				"still running when it was cut off and may have had effects: Run `sleep 3600`.",
			} {
				if !strings.Contains(sent, want) {
					t.Errorf("the continuation prompt lacks %q:\n%s", want, sent)
				}
			}
			// What the agent made of it: the demo agent names the files and
			// the cut-off call it read in the prompt it got.
			said := w.agentText(sid)["c1"]
			for _, want := range []string{
				"I see these files changed: a.txt (added), sub/b.txt (added).",
				"I do not count on what did not complete: Run `sleep 3600`",
			} {
				if !strings.Contains(said, want) {
					t.Errorf("the agent's answer to the continuation lacks %q:\n%s", want, said)
				}
			}
		})
	}
}

// waitReportSettled waits until an interrupted turn's recovery report has
// its workspace part: the executor is asked right after the interruption
// (start-up reconciliation included), and its answer is one more
// session.recovery_changed, the last one the interruption causes.
func (w *world) waitReportSettled(sid string) {
	w.t.Helper()
	w.waitFor("the recovery report's workspace part", func() bool {
		rec, _ := w.sessionContext(sid)["recovery"].(map[string]any)
		report, _ := rec["report"].(map[string]any)
		return report == nil || report["workspace"] != nil
	})
}

// checkReport pins down the report of the /work a.txt sub/b.txt turn.
func checkReport(t *testing.T, where string, r map[string]any) {
	t.Helper()
	if r == nil {
		t.Fatalf("%s: no recovery report", where)
	}
	ws, _ := r["workspace"].(map[string]any)
	if ws == nil || ws["error"] != nil {
		t.Fatalf("%s: workspace part: got %v", where, ws)
	}
	files := map[string]string{}
	for _, f := range list(ws, "files") {
		files[f["path"].(string)] = f["status"].(string)
	}
	if len(files) != 2 || files["a.txt"] != "added" || files["sub/b.txt"] != "added" {
		t.Errorf("%s: changed files: got %v, want exactly a.txt and sub/b.txt added", where, files)
	}
	if ws["headMoved"] != false {
		t.Errorf("%s: headMoved: got %v, want false", where, ws["headMoved"])
	}
	if got, _ := json.Marshal(r["runningCommands"]); string(got) != "[\"Run `sleep 3600`\"]" {
		t.Errorf("%s: running commands: got %s, want the sleep", where, got)
	}
	calls := list(r, "toolCalls")
	var summary []string
	for _, c := range calls {
		summary = append(summary, c["title"].(string)+"="+c["status"].(string))
	}
	want := []string{"Write a.txt=completed", "Write sub/b.txt=completed", "Run `ls`=completed", "Run `sleep 3600`=interrupted"}
	if !slices.Equal(summary, want) {
		t.Errorf("%s: tool calls: got %v, want %v", where, summary, want)
	}
	for _, c := range calls {
		if c["title"] == "Run `ls`" {
			out, _ := c["output"].(string)
			if !strings.Contains(out, "a.txt") || !strings.Contains(out, "before.txt") || c["finished"] != true {
				t.Errorf("%s: ls: got output %q finished %v, want the listing", where, out, c["finished"])
			}
		}
	}
}

func diffPaths(d map[string]any) []string {
	var out []string
	for _, f := range list(d, "files") {
		out = append(out, f["path"].(string))
	}
	slices.Sort(out)
	return out
}
