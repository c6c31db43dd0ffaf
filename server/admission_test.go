package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3" // raw SQL to make the store refuse a write

	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store/storetest"
)

// deepPromptCases are prompts that nest past the default depth limit in the
// places a client controls: 998 levels is the depth that used to pass the
// turn row's json_valid check yet fail the turn.queued event's (SQLite
// refuses JSON nested more than 1000 levels deep).
var deepPromptCases = []struct {
	name   string
	prompt func() string
}{
	{"object in _meta, 998 levels", func() string {
		return `[{"type":"text","text":"deep","_meta":` + nested(`{"a":`, "1", "}", 998) + `}]`
	}},
	{"array in annotations of an image", func() string {
		return `[{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"x":` + nested("[", "1", "]", 5000) + `}}]`
	}},
	{"resource nested past the limit", func() string {
		return `[{"type":"resource","resource":{"uri":"file:///x","text":"t","more":` + nested(`{"a":`, `"x"`, "}", 65) + `}}]`
	}},
}

func nested(open, leaf, closing string, n int) string {
	return strings.Repeat(open, n) + leaf + strings.Repeat(closing, n)
}

// TestDeepPromptRefusedBeforeAgent: a prompt nested past the limit is a
// client mistake (400 validation_failed), never reaches the agent and
// leaves no turn; the same promptId with a valid body then runs normally.
func TestDeepPromptRefusedBeforeAgent(t *testing.T) {
	for _, tc := range deepPromptCases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, daemonOptions{})
			sid, _ := d.createSession(nil)
			body := `{"promptId":"deep-1","prompt":` + tc.prompt() + `}`
			r := d.do("POST", "/session/"+sid+"/prompt", body)
			if r.Status != http.StatusBadRequest || r.JSON(t)["code"] != "validation_failed" {
				t.Fatalf("deep prompt: got %d %s, want 400 validation_failed", r.Status, r.Body)
			}
			if r := d.do("GET", "/session/"+sid+"/turns/deep-1", nil); r.Status != http.StatusNotFound {
				t.Fatalf("turn of a refused prompt: got %d %s, want 404", r.Status, r.Body)
			}
			pid := d.prompt(sid, "hello after a refusal", "deep-1")
			if got := d.waitTurn(sid, pid)["state"]; got != "completed" {
				t.Fatalf("retry with a valid body: got state %v, want completed", got)
			}
			sent := d.sentPrompts(sid)
			if len(sent) != 1 || sent[0] != "hello after a refusal" {
				t.Fatalf("agent got session/prompt %q, want only the valid retry", sent)
			}
			if kind := recoveryOf(t, d.recoveryContext(sid), "recovery")["kind"]; kind != "clean" {
				t.Fatalf("recovery after a refused prompt: got %v, want clean", kind)
			}
		})
	}
}

// TestCreateSessionBadInitialPromptLeavesNothing: POST /session whose
// initial prompt is refused answers 4xx and leaves no task, no session, no
// actor and no agent behind.
func TestCreateSessionBadInitialPromptLeavesNothing(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	for _, tc := range deepPromptCases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"agentProfileId":"demo","cwd":` + jsonString(t.TempDir()) + `,"initialPrompt":` + tc.prompt() + `}`
			r := d.do("POST", "/session", body)
			if r.Status != http.StatusBadRequest || r.JSON(t)["code"] != "validation_failed" {
				t.Fatalf("create with a deep initial prompt: got %d %s, want 400 validation_failed", r.Status, r.Body)
			}
			d.assertNothingCreated()
		})
	}
}

// TestFailedAdmissionDispatchesNothing forces the write that admits a turn
// to fail and checks that the agent never hears of the prompt, that no
// turn is left in memory (a retry is not answered from a ghost) and that
// the same promptId runs normally once the store accepts it.
func TestFailedAdmissionDispatchesNothing(t *testing.T) {
	cases := []struct {
		name string
		// sabotage makes storing promptId fail; it returns the undo.
		sabotage func(d *daemon, sid, promptID string) func()
		want     int
	}{
		{"store refuses the row", func(d *daemon, _, promptID string) func() { return refuseTurn(d, promptID) }, http.StatusInternalServerError},
		{"prompt id already stored behind the actor's back", func(d *daemon, sid, promptID string) func() {
			if _, err := d.Store.CreateTurn(context.Background(), session.Turn{SessionID: sid, PromptID: promptID,
				Kind: session.TurnPrompt, Prompt: json.RawMessage(`[{"type":"text","text":"other"}]`), State: session.TurnCompleted}); err != nil {
				t.Fatal(err)
			}
			return nil
		}, http.StatusConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, daemonOptions{})
			sid, _ := d.createSession(nil)
			d.prompt(sid, "warm up", "warm") // the agent is up and idle
			d.waitTurn(sid, "warm")
			undo := tc.sabotage(d, sid, "doomed")
			body := map[string]any{"promptId": "doomed", "prompt": text("must not run")}
			for range 2 { // a retry must not be answered from a turn that does not exist
				if r := d.do("POST", "/session/"+sid+"/prompt", body); r.Status != tc.want {
					t.Fatalf("prompt whose turn cannot be stored: got %d %s, want %d", r.Status, r.Body, tc.want)
				}
			}
			// A later prompt runs: everything sent to the agent before it is done.
			d.waitTurn(sid, d.prompt(sid, "after the failure", "after"))
			for _, p := range d.sentPrompts(sid) {
				if p == "must not run" {
					t.Fatalf("agent received a prompt whose admission failed: %s", p)
				}
			}
			if undo == nil {
				return
			}
			undo()
			if got := d.waitTurn(sid, d.prompt(sid, "must not run", "doomed"))["state"]; got != "completed" {
				t.Fatalf("retry once the store accepts it: got state %v, want completed", got)
			}
			if n := len(d.sentPrompts(sid)); n != 3 {
				t.Fatalf("agent got %d session/prompt, want 3 (warm up, after, the retry)", n)
			}
			d.checkOneTruth(sid)
		})
	}
}

// TestCreateSessionFailedAdmissionLeavesNothing: when the initial turn
// cannot be stored, POST /session leaves no task, session or agent.
func TestCreateSessionFailedAdmissionLeavesNothing(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	refuseTurn(d, "doomed")
	r := d.do("POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": t.TempDir(),
		"initialPrompt": text("must not run"), "promptId": "doomed"})
	if r.Status != http.StatusInternalServerError {
		t.Fatalf("create whose initial turn cannot be stored: got %d %s, want 500", r.Status, r.Body)
	}
	d.assertNothingCreated()
}

// refuseTurn installs a trigger that makes the store refuse to insert the
// turn promptID, as a full disk or a broken database would; the returned
// function removes it.
func refuseTurn(d *daemon, promptID string) func() {
	d.t.Helper()
	return storetest.Fault(d.t, d.Dir, "refuse_turn", "INSERT", "turns", "NEW.prompt_id = "+sqlQuote(promptID))
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// assertNothingCreated checks that the daemon has no task, no session, no
// live actor and never started an agent.
func (d *daemon) assertNothingCreated() {
	d.t.Helper()
	if got := list(d.do("GET", "/session", nil).JSON(d.t), "sessions"); len(got) != 0 {
		d.t.Errorf("sessions after a failed create: got %d, want 0", len(got))
	}
	if got := list(d.do("GET", "/tasks", nil).JSON(d.t), "tasks"); len(got) != 0 {
		d.t.Errorf("tasks after a failed create: got %d, want 0", len(got))
	}
	if live := d.Mgr.Live(context.Background()); live.Sessions != 0 || live.Agents != 0 {
		d.t.Errorf("after a failed create: got %d live sessions and %d agents, want none", live.Sessions, live.Agents)
	}
	if starts := d.Sent.startOrder(); len(starts) != 0 {
		d.t.Errorf("agents initialized after a failed create: %v, want none", starts)
	}
}

// TestOddPromptShapesNeverFail: shapes a hostile client may send are either
// admitted or refused as its mistake (4xx), never a 500 from the store.
func TestOddPromptShapesNeverFail(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	cases := []struct{ name, prompt string }{
		{"number beyond float64", `[{"type":"text","text":"x","_meta":{"n":1e400}}]`},
		{"integer beyond int64", `[{"type":"text","text":"x","_meta":{"n":123456789012345678901234567890}}]`},
		{"lone surrogates", `[{"type":"text","text":"\ud800x\udc00"}]`},
		{"NUL in text", `[{"type":"text","text":"a\u0000b"}]`},
		{"invalid UTF-8", "[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]"},
		{"past encoding/json's depth", `[{"type":"text","text":"x","_meta":{"a":` + nested("[", "", "]", 10001) + `}}]`},
		{"duplicate keys", `[{"type":"text","text":"x","text":"y"}]`},
		{"many keys in _meta", `[{"type":"text","text":"x","_meta":{` + strings.Repeat(`"k":1,`, 5000) + `"z":1}}]`},
		{"at the depth limit", `[{"type":"text","text":"x","_meta":` + nested(`{"a":`, "1", "}", 62) + `}]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r := d.do("POST", "/session/"+sid+"/prompt", `{"prompt":`+tc.prompt+`}`); r.Status >= 500 {
				t.Errorf("prompt: got %d %s, want 202 or a 4xx", r.Status, r.Body)
			}
			body := `{"agentProfileId":"demo","cwd":` + jsonString(t.TempDir()) + `,"initialPrompt":` + tc.prompt + `}`
			if r := d.do("POST", "/session", body); r.Status >= 500 {
				t.Errorf("create: got %d %s, want 201 or a 4xx", r.Status, r.Body)
			}
		})
	}
}

// TestOutputAfterTurnEndsIsDropped: chunks an agent sends after its turn
// was answered (the leftovers of a cancelled or cut-off turn) belong to no
// turn: they are not stored as a message without a promptId, and the
// finished turn is not rewritten.
func TestOutputAfterTurnEndsIsDropped(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/late 3", "late"))
	// The agent sends its plan after the leftovers, and updates are
	// handled in wire order: once the plan is stored, so is (or is not)
	// every leftover.
	var tr map[string]any
	d.waitFor("the plan sent after the leftovers", func() bool {
		tr = d.transcript(sid)
		return tr["plan"] != nil
	})
	for _, m := range list(tr, "messages") {
		if m["promptId"] == nil || m["promptId"] == "" {
			t.Errorf("message without a promptId: %v", m)
		}
		if strings.Contains(fmt.Sprint(m["text"]), "late 1") {
			t.Errorf("leftover output stored: %v", m)
		}
	}
	if got := d.turn(sid, "late")["state"]; got != "completed" {
		t.Errorf("turn after leftovers: got %v, want completed", got)
	}
}

// TestPromptContentFollowsCapabilities: an image goes to an agent whose
// initialize said it takes images, arriving whole (the reply names its
// size) and stored with the turn; to one that did not it is refused as the
// client's mistake, storing nothing, whether the agent runs or the daemon
// knows its capabilities only from the profile (after a restart).
func TestPromptContentFollowsCapabilities(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))
	image := []map[string]any{{"type": "text", "text": "what is this?"}, {"type": "image", "mimeType": "image/png", "data": png}}
	yaml := profilesYAML(t, agentProfile{id: "seeing", stateDir: t.TempDir()}, agentProfile{id: "blind", stateDir: t.TempDir(), flags: []string{"--no-image"}})
	d := startDaemon(t, daemonOptions{agentsYAML: yaml})
	seeing, _ := d.createSession(map[string]any{"agentProfileId": "seeing"})
	blind, _ := d.createSession(map[string]any{"agentProfileId": "blind"})
	d.waitTurn(seeing, d.prompt(seeing, "hello", "p0"))
	d.waitTurn(blind, d.prompt(blind, "hello", "p0"))

	refused := func(d *daemon, when string) {
		t.Helper()
		r := d.do("POST", "/session/"+blind+"/prompt", map[string]any{"prompt": image, "promptId": "img"})
		if p := r.JSON(t); r.Status != http.StatusBadRequest || p["code"] != "prompt_content_unsupported" || p["blockType"] != "image" {
			t.Fatalf("%s: image to an agent without the capability: got %d %s, want 400 prompt_content_unsupported blockType image", when, r.Status, r.Body)
		}
		if r := d.do("GET", "/session/"+blind+"/turns/img", nil); r.Status != http.StatusNotFound {
			t.Errorf("%s: refused prompt's turn: got %d %s, want 404", when, r.Status, r.Body)
		}
	}
	refused(d, "agent running")

	r := d.do("POST", "/session/"+seeing+"/prompt", map[string]any{"prompt": image, "promptId": "img"})
	if r.Status != http.StatusAccepted {
		t.Fatalf("image to an agent with the capability: got %d %s, want 202", r.Status, r.Body)
	}
	if got := d.waitTurn(seeing, "img")["state"]; got != "completed" {
		t.Fatalf("image turn: got %v, want completed", got)
	}
	var said string
	for _, m := range list(d.transcript(seeing), "messages") {
		if m["promptId"] == "img" && m["role"] == "agent" {
			said += fmt.Sprint(m["text"])
		}
	}
	if !strings.Contains(said, "You attached an image (image/png, 12 bytes).") {
		t.Errorf("agent's reply: got %q, want it to name the image it received", said)
	}
	turn := d.do("GET", "/session/"+seeing+"/turns/img", nil).JSON(t)
	if blocks, _ := turn["prompt"].([]any); len(blocks) != 2 || blocks[1].(map[string]any)["data"] != png {
		t.Errorf("stored prompt: got %v, want the text and the image as sent", turn["prompt"])
	}

	d = d.restart(daemonOptions{agentsYAML: yaml})
	refused(d, "after a restart, agent not started")
}
