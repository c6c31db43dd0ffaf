package crash_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/testbin"
)

func turnIDs(tr map[string]any) (ids []string, rewound map[string]bool) {
	rewound = map[string]bool{}
	for _, turn := range list(tr, "turns") {
		id := turn["promptId"].(string)
		ids = append(ids, id)
		if turn["rewound"] == true {
			rewound[id] = true
		}
	}
	return ids, rewound
}

// agentReplyOf is the agent's text for turn pid of sid.
func (w *world) agentReplyOf(sid, pid string) string {
	w.t.Helper()
	var b strings.Builder
	for _, m := range list(w.transcript(sid), "messages") {
		if m["role"] == "agent" && m["promptId"] == pid {
			b.WriteString(m["text"].(string))
		}
	}
	return b.String()
}

// TestForkRewindUndo, on the standalone and detached runtimes and a
// remote host in a network namespace, with the demo agent:
//   - five turns change a repository; a fork at turn 2 holds turn 2's
//     end state byte-exact in a new worktree, its transcript is turns 1
//     and 2 with its origin named, its agent is briefed with them once,
//     and its later turns never touch the origin's files;
//   - a rewind is refused while a turn runs; its dry run names the file
//     the user changed outside any turn and changes nothing; the rewind
//     to turn 3 restores turn 3's end byte-exact and marks turns 4 and 5
//     rewound; the next turn's agent is briefed with turns 1–3 only;
//     the undo of a rewind gives back the exact files;
//   - after kill -9 of tetherd the session still forks, and hands off to
//     another profile in the same directory;
//   - a fork at the latest turn gets its context natively
//     (checkNativeFork).
func TestForkRewindUndo(t *testing.T) {
	t.Parallel() // it mostly waits on daemons and agents: beside the others
	for _, rt := range allRuntimes() {
		t.Run(rt.name, func(t *testing.T) {
			w := newWorld(t, profile{id: "demo"}, profile{id: "other"})
			executor, restart := rt.start(t, w)
			repo := newRepo(t)
			// Untracked and in a subdirectory: a checkpoint holds those too.
			if err := os.MkdirAll(filepath.Join(repo, "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, "dir", "keep.txt"), []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sid := w.createSessionIn("demo", executor, repo)

			ends := map[string]map[string]string{}
			for i := 1; i <= 5; i++ {
				pid := fmt.Sprintf("p%d", i)
				w.prompt(sid, fmt.Sprintf("/tool write shared.txt version %d", i), pid+"a")
				w.waitTurn(sid, pid+"a")
				// Each numbered turn also adds a file of its own.
				w.prompt(sid, fmt.Sprintf("/tool write dir/f%d.txt file %d", i, i), pid)
				if turn := w.waitTurn(sid, pid); turn["state"] != "completed" {
					t.Fatalf("turn %s: got %v", pid, turn)
				}
				ends[pid] = testbin.TreeFiles(t, repo)
				if ends[pid][fmt.Sprintf("dir/f%d.txt", i)] != fmt.Sprintf("file %d", i) {
					t.Fatalf("turn %s did not write its file: %v", pid, ends[pid])
				}
			}

			// Fork at turn 2 into a new worktree.
			code, fork := w.do(http.MethodPost, "/session/"+sid+"/fork", map[string]any{"atTurn": "p2"})
			if code != http.StatusCreated {
				t.Fatalf("fork: got %d %v", code, fork)
			}
			fid, fcwd := fork["id"].(string), fork["cwd"].(string)
			w.sessions = append(w.sessions, fid)
			if o, _ := fork["forkedFrom"].(map[string]any); o["sessionId"] != sid || o["promptId"] != "p2" {
				t.Errorf("forkedFrom: got %v, want %s at p2", fork["forkedFrom"], sid)
			}
			if strings.HasPrefix(fcwd, repo) || fcwd == "" {
				t.Fatalf("fork cwd %q: want a worktree outside the repository's checkout", fcwd)
			}
			testbin.SameTree(t, "the fork's files", testbin.TreeFiles(t, fcwd), ends["p2"])
			ids, _ := turnIDs(w.transcript(fid))
			if strings.Join(ids, ",") != "p1a,p1,p2a,p2" {
				t.Errorf("fork's turns: got %v, want p1a,p1,p2a,p2", ids)
			}
			w.prompt(fid, "/tool write dir/fork.txt forked", "f1")
			w.waitTurn(fid, "f1")
			if r := w.agentReplyOf(fid, "f1"); !strings.HasPrefix(r, "[briefed with ") {
				t.Errorf("fork's first reply: got %.80q, want the agent briefed with the copied turns", r)
			}
			w.prompt(fid, "/echo again", "f2")
			w.waitTurn(fid, "f2")
			if r := w.agentReplyOf(fid, "f2"); strings.Contains(r, "briefed") {
				t.Errorf("fork's second reply: got %.80q, want no second briefing", r)
			}
			if b, err := os.ReadFile(filepath.Join(fcwd, "dir", "fork.txt")); err != nil || string(b) != "forked" {
				t.Errorf("the fork's turn wrote %q, %v into its own directory", b, err)
			}
			testbin.SameTree(t, "the origin after the fork's turns", testbin.TreeFiles(t, repo), ends["p5"])

			// A rewind while a turn runs is refused.
			w.prompt(sid, "/hang", "hang")
			w.waitFor("the hanging turn to run", func() bool { return w.turn(sid, "hang")["state"] == "running" })
			if code, m := w.do(http.MethodPost, "/session/"+sid+"/rewind", map[string]any{"toTurn": "p3"}); code != http.StatusConflict || m["code"] != "rewind_turn_running" {
				t.Errorf("rewind while a turn runs: got %d %v, want 409 rewind_turn_running", code, m)
			}
			if code, m := w.do(http.MethodPost, "/session/"+sid+"/cancel", map[string]any{}); code != http.StatusOK {
				t.Fatalf("cancel: got %d %v", code, m)
			}
			w.waitTurn(sid, "hang")
			before := testbin.TreeFiles(t, repo)

			// The user edits a file outside any turn: the dry run names it.
			if err := os.WriteFile(filepath.Join(repo, "mine.txt"), []byte("the user's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before["mine.txt"] = "the user's\n"
			code, dry := w.do(http.MethodPost, "/session/"+sid+"/rewind?dryRun=true", map[string]any{"toTurn": "p3"})
			if code != http.StatusOK || dry["dryRun"] != true {
				t.Fatalf("dry run: got %d %v", code, dry)
			}
			if uc, _ := dry["userChanged"].([]any); len(uc) != 1 || uc[0] != "mine.txt" {
				t.Errorf("dry run userChanged: got %v, want [mine.txt]", dry["userChanged"])
			}
			testbin.SameTree(t, "after the dry run", testbin.TreeFiles(t, repo), before)

			code, rw := w.do(http.MethodPost, "/session/"+sid+"/rewind", map[string]any{"toTurn": "p3"})
			if code != http.StatusOK {
				t.Fatalf("rewind: got %d %v", code, rw)
			}
			testbin.SameTree(t, "after the rewind to p3", testbin.TreeFiles(t, repo), ends["p3"])
			_, rewound := turnIDs(w.transcript(sid))
			for _, id := range []string{"p4a", "p4", "p5a", "p5", "hang"} {
				if !rewound[id] {
					t.Errorf("turn %s: not marked rewound (rewound: %v)", id, rewound)
				}
			}
			if len(rewound) != 5 {
				t.Errorf("rewound turns: got %v, want p4a, p4, p5a, p5 and hang", rewound)
			}

			// Undo gives back the exact files, and unmarks the turns.
			if code, m := w.do(http.MethodPost, "/session/"+sid+"/rewind/undo", nil); code != http.StatusOK {
				t.Fatalf("undo: got %d %v", code, m)
			}
			testbin.SameTree(t, "after the undo", testbin.TreeFiles(t, repo), before)
			if _, rewound := turnIDs(w.transcript(sid)); len(rewound) != 0 {
				t.Errorf("after the undo: rewound turns %v, want none", rewound)
			}
			// Rewind again; the next turn's agent gets turns 1–3 only.
			if code, m := w.do(http.MethodPost, "/session/"+sid+"/rewind", map[string]any{"toTurn": "p3"}); code != http.StatusOK {
				t.Fatalf("second rewind: got %d %v", code, m)
			}
			w.prompt(sid, "/echo after the rewind", "p6")
			w.waitTurn(sid, "p6")
			if r := w.agentReplyOf(sid, "p6"); !strings.HasPrefix(r, "[briefed with ") {
				t.Errorf("reply after the rewind: got %.80q, want a fresh agent briefed with the turns left", r)
			}
			if code, m := w.do(http.MethodPost, "/session/"+sid+"/rewind/undo", nil); code != http.StatusConflict || m["code"] != "rewind_not_undoable" {
				t.Errorf("undo after a turn: got %d %v, want 409 rewind_not_undoable", code, m)
			}

			// kill -9 of tetherd: the session still forks and hands off.
			w.kill9()
			restart()
			code, f2 := w.do(http.MethodPost, "/session/"+sid+"/fork", map[string]any{"atTurn": "p1"})
			if code != http.StatusCreated {
				t.Fatalf("fork after kill -9: got %d %v", code, f2)
			}
			w.sessions = append(w.sessions, f2["id"].(string))
			testbin.SameTree(t, "the fork at p1 after kill -9", testbin.TreeFiles(t, f2["cwd"].(string)), ends["p1"])
			code, h := w.do(http.MethodPost, "/session/"+sid+"/handoff", map[string]any{"agentProfileId": "other"})
			if code != http.StatusCreated {
				t.Fatalf("hand-off: got %d %v", code, h)
			}
			hid := h["id"].(string)
			w.sessions = append(w.sessions, hid)
			if h["cwd"] != repo || h["agentProfileId"] != "other" {
				t.Errorf("hand-off: got cwd %v profile %v, want %s and other", h["cwd"], h["agentProfileId"], repo)
			}
			w.prompt(hid, "/tool write handed.txt by the other agent", "h1")
			w.waitTurn(hid, "h1")
			if b, err := os.ReadFile(filepath.Join(repo, "handed.txt")); err != nil || string(b) != "by the other agent" {
				t.Errorf("the hand-off's turn wrote %q, %v; want it in the shared directory", b, err)
			}
			if r := w.agentReplyOf(hid, "h1"); !strings.HasPrefix(r, "[briefed with ") {
				t.Errorf("hand-off's first reply: got %.80q, want the other agent briefed", r)
			}
			w.checkNativeFork(sid)
		})
	}
}

// checkNativeFork forks session sid (the demo agent, which takes
// session/fork) at its latest turn, twice:
//   - the first fork's agent copies the origin's ACP session
//     (session.resumed native_fork) and is never briefed; the origin
//     goes on untouched;
//   - the origin takes a turn before the second fork's first prompt, so
//     the copy would hold a turn the fork's transcript does not: that
//     fork's agent is briefed instead (history_injection).
func (w *world) checkNativeFork(sid string) {
	w.t.Helper()
	t := w.t
	fork := func() string {
		t.Helper()
		code, f := w.do(http.MethodPost, "/session/"+sid+"/fork", map[string]any{"cwd": filepath.Join(t.TempDir(), "fork")})
		if code != http.StatusCreated {
			t.Fatalf("fork at the latest turn: got %d %v", code, f)
		}
		w.sessions = append(w.sessions, f["id"].(string))
		return f["id"].(string)
	}
	native := fork()
	w.prompt(native, "/echo in the fork", "n1")
	w.waitTurn(native, "n1")
	if r := w.agentReplyOf(native, "n1"); !strings.HasPrefix(r, "[forked with ") || strings.Contains(r, "briefed") {
		t.Errorf("the native fork's first reply: got %.120q, want the origin's conversation copied (forked), no briefing", r)
	}
	if p := lastEvent(t, w.replay(native), "session.resumed"); p == nil || p["strategy"] != "native_fork" || p["contextRestored"] != true {
		t.Errorf("the native fork's session.resumed: got %v, want native_fork with the context restored", p)
	}
	w.prompt(native, "/echo again", "n2")
	w.waitTurn(native, "n2")
	if r := w.agentReplyOf(native, "n2"); r != "again" {
		t.Errorf("the native fork's second reply: got %.120q, want %q", r, "again")
	}

	late := fork()
	w.prompt(sid, "/echo the origin goes on", "p7")
	w.waitTurn(sid, "p7")
	if r := w.agentReplyOf(sid, "p7"); r != "the origin goes on" {
		t.Errorf("the origin after its forks: got %.120q, want its own reply", r)
	}
	w.prompt(late, "/echo in the late fork", "l1")
	w.waitTurn(late, "l1")
	if r := w.agentReplyOf(late, "l1"); !strings.HasPrefix(r, "[briefed with ") || strings.Contains(r, "forked") {
		t.Errorf("the late fork's first reply: got %.120q, want it briefed (its origin went on)", r)
	}
	if p := lastEvent(t, w.replay(late), "session.resumed"); p == nil || p["strategy"] != "history_injection" {
		t.Errorf("the late fork's session.resumed: got %v, want history_injection", p)
	}
}

// TestHandoffOfAnInterruptedTurn: tetherd is killed (-9) in the middle of
// a standalone session's turn, which the restart records as interrupted;
// the session is handed off. The new session's recovery plan says the
// copied turn can be continued, and its continue reaches the agent once:
// briefed with the transcript, then told what was cut off.
func TestHandoffOfAnInterruptedTurn(t *testing.T) {
	w := newWorld(t, profile{id: "demo"}, profile{id: "other"})
	w.start()
	sid, cwd := w.createSession("demo")
	rec := w.record(sid)
	w.prompt(sid, "/steps 2 50 hang", "p1")
	w.waitSeen(rec, "a tool call left running", func(f frame) bool {
		return f.Event == "tool_call.started" && strings.Contains(f.Data, `"status":"in_progress"`)
	})
	w.kill9()
	w.start()
	if turn := w.waitTurn(sid, "p1"); turn["state"] != "interrupted" {
		t.Fatalf("turn p1 after kill -9: got %v, want interrupted", turn["state"])
	}
	code, h := w.do(http.MethodPost, "/session/"+sid+"/handoff", map[string]any{"agentProfileId": "other"})
	if code != http.StatusCreated {
		t.Fatalf("hand-off: got %d %v", code, h)
	}
	hid := h["id"].(string)
	w.sessions = append(w.sessions, hid)
	if h["cwd"] != cwd {
		t.Errorf("hand-off cwd: got %v, want %s", h["cwd"], cwd)
	}
	var rec0 map[string]any
	w.waitFor("the new session's recovery plan", func() bool {
		rec0, _ = w.sessionContext(hid)["recovery"].(map[string]any)
		return rec0 != nil && rec0["canContinue"] == true
	})
	if rec0["kind"] != "interrupted_turn" || rec0["promptId"] != "p1" {
		t.Errorf("the new session's recovery: got %v, want interrupted_turn of p1", rec0)
	}
	code, c := w.do(http.MethodPost, "/session/"+hid+"/continue", map[string]any{"promptId": "c1"})
	if code != http.StatusAccepted {
		t.Fatalf("continue the hand-off: got %d %v", code, c)
	}
	if turn := w.waitTurn(hid, "c1"); turn["state"] != "completed" {
		t.Fatalf("the continuation: got %v, want completed", turn)
	}
	reply := w.agentReplyOf(hid, "c1")
	if !strings.HasPrefix(reply, "[briefed with ") || !strings.Contains(reply, continuationAnswer) || strings.Count(reply, "briefed") != 1 {
		t.Errorf("the continuation's reply: got %.300q, want the agent briefed once, then continuing", reply)
	}
}
