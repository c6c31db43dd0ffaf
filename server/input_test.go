package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	cases := []struct {
		name   string
		path   string
		header map[string]string
		want   int
	}{
		{"health needs no token", "/health", nil, http.StatusOK},
		{"missing token", "/agents", nil, http.StatusUnauthorized},
		{"wrong token", "/agents", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"wrong scheme", "/agents", map[string]string{"Authorization": "Basic " + testToken}, http.StatusUnauthorized},
		{"unknown route without token", "/nope", nil, http.StatusUnauthorized},
		{"valid token", "/agents", map[string]string{"Authorization": "Bearer " + testToken}, http.StatusOK},
		{"spec", "/openapi.yaml", map[string]string{"Authorization": "Bearer " + testToken}, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.doRaw("GET", tc.path, nil, tc.header)
			if r.Status != tc.want {
				t.Fatalf("got %d, want %d: %s", r.Status, tc.want, r.Body)
			}
			if tc.want == http.StatusUnauthorized && r.JSON(t)["code"] != "unauthorized" {
				t.Errorf("got code %v, want unauthorized", r.JSON(t)["code"])
			}
		})
	}
}

func TestBadInputGetsProblemWithStableCode(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, cwd := d.createSession(nil)
	file := filepath.Join(cwd, "README.md")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink("/nonexistent/target", link); err != nil {
		t.Fatal(err)
	}
	big := `{"prompt":[{"type":"text","text":"` + strings.Repeat("x", 70<<10) + `"}]}`
	cases := []struct {
		name, method, path string
		body               any
		wantStatus         int
		wantCode           string
	}{
		{"malformed json", "POST", "/session", `{"agentProfileId":`, 400, "malformed_json"},
		{"not json at all", "POST", "/tasks", `hello`, 400, "malformed_json"},
		{"unknown field", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": cwd, "command": "rm -rf /"}, 400, "validation_failed"},
		{"missing required field", "POST", "/session", map[string]any{"cwd": cwd}, 400, "validation_failed"},
		{"wrong type", "POST", "/session", map[string]any{"agentProfileId": 7, "cwd": cwd}, 400, "validation_failed"},
		{"unknown agent profile", "POST", "/session", map[string]any{"agentProfileId": "nope", "cwd": cwd}, 404, "agent_profile_not_found"},
		{"unavailable agent", "POST", "/session", map[string]any{"agentProfileId": "claude", "cwd": cwd}, 409, "agent_unavailable"},
		{"relative cwd", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": "some/dir"}, 400, "invalid_cwd"},
		{"missing cwd", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": "/no/such/dir"}, 400, "invalid_cwd"},
		{"cwd is a file", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": file}, 400, "invalid_cwd"},
		{"dangling symlink cwd", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": link}, 400, "invalid_cwd"},
		{"unknown task", "POST", "/session", map[string]any{"agentProfileId": "demo", "cwd": cwd, "taskId": "nope"}, 404, "task_not_found"},
		{"unknown session", "GET", "/session/nope", nil, 404, "session_not_found"},
		{"prompt unknown session", "POST", "/session/nope/prompt", map[string]any{"prompt": text("hi")}, 404, "session_not_found"},
		{"empty prompt", "POST", "/session/" + sid + "/prompt", map[string]any{"prompt": []any{}}, 400, "validation_failed"},
		{"bad content block", "POST", "/session/" + sid + "/prompt", map[string]any{"prompt": []any{map[string]any{"type": "video"}}}, 400, "validation_failed"},
		{"bad prompt id", "POST", "/session/" + sid + "/prompt", map[string]any{"prompt": text("hi"), "promptId": "../x"}, 400, "validation_failed"},
		{"bad multitask", "POST", "/session/" + sid + "/prompt", map[string]any{"prompt": text("hi"), "multitask": "maybe"}, 400, "validation_failed"},
		{"oversize body", "POST", "/session/" + sid + "/prompt", big, 413, "payload_too_large"},
		{"unknown turn", "GET", "/session/" + sid + "/turns/nope", nil, 404, "turn_not_found"},
		{"unknown permission", "POST", "/session/" + sid + "/permission/nope", map[string]any{"optionId": "x"}, 404, "permission_not_found"},
		{"empty permission reply", "POST", "/session/" + sid + "/permission/nope", map[string]any{}, 400, "validation_failed"},
		{"both permission fields", "POST", "/session/" + sid + "/permission/nope", map[string]any{"optionId": "x", "outcome": "cancelled"}, 400, "validation_failed"},
		{"unknown task get", "GET", "/tasks/nope", nil, 404, "task_not_found"},
		{"empty task patch", "PATCH", "/tasks/nope", map[string]any{}, 400, "validation_failed"},
		{"bad task state", "PATCH", "/tasks/nope", map[string]any{"state": "DONE"}, 400, "validation_failed"},
		{"bad session state filter", "GET", "/sessions?state=NOPE", nil, 400, "validation_failed"},
		{"bad page size", "GET", "/sessions?limit=0", nil, 400, "validation_failed"},
		{"bad page token", "GET", "/sessions?pageToken=garbage", nil, 400, "invalid_request"},
		{"unknown route", "GET", "/nope", nil, 404, "route_not_found"},
		{"wrong method", "PUT", "/session/" + sid, nil, 405, "method_not_allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := d.do(tc.method, tc.path, tc.body)
			if r.Status != tc.wantStatus {
				t.Fatalf("got %d, want %d: %s", r.Status, tc.wantStatus, r.Body)
			}
			if got := r.JSON(t)["code"]; got != tc.wantCode {
				t.Errorf("got code %v, want %s: %s", got, tc.wantCode, r.Body)
			}
		})
	}
	// None of that hurt the session.
	pid := d.prompt(sid, "/echo still fine", "")
	if got := d.waitTurn(sid, pid)["state"]; got != "completed" {
		t.Fatalf("got %v, want completed", got)
	}
}

func TestTasksAndSessionListing(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	r := d.do("POST", "/tasks", map[string]any{"title": "Refactor", "workspace": t.TempDir()})
	if r.Status != http.StatusCreated {
		t.Fatalf("create task: got %d %s", r.Status, r.Body)
	}
	task := r.JSON(t)
	tid := task["id"].(string)
	if task["state"] != "TODO" {
		t.Errorf("got new task state %v, want TODO", task["state"])
	}
	var ids []string
	for i := 0; i < 3; i++ {
		id, _ := d.createSession(map[string]any{"taskId": tid})
		ids = append(ids, id)
	}
	other, _ := d.createSession(nil)

	var got []string
	token := ""
	for page := 0; page < 5; page++ {
		q := "/sessions?limit=2&taskId=" + tid
		if token != "" {
			q += "&pageToken=" + token
		}
		l := d.do("GET", q, nil).JSON(t)
		for _, s := range list(l, "sessions") {
			got = append(got, s["id"].(string))
		}
		next, _ := l["nextPageToken"].(string)
		if next == "" {
			break
		}
		token = next
	}
	if len(got) != 3 {
		t.Fatalf("got %d sessions for the task over pages, want 3: %v", len(got), got)
	}
	for _, id := range got {
		if id == other {
			t.Errorf("session %s of another task was listed", other)
		}
	}
	d.do("DELETE", "/session/"+ids[0], nil)
	l := d.do("GET", "/sessions?state=COMPLETED", nil).JSON(t)
	if s := list(l, "sessions"); len(s) != 1 || s[0]["id"] != ids[0] {
		t.Errorf("got %v, want only the closed session", s)
	}
	// A session that finishes starting waits for input, which moves its
	// task to REVIEW (the task follows its sessions); let the two live
	// ones settle so the user's PATCH below is the last word.
	for _, id := range ids[1:] {
		d.waitFor("session "+id+" to wait for input", func() bool { return d.session(id)["state"] == "WAITING_FOR_INPUT" })
	}
	r = d.do("PATCH", "/tasks/"+tid, map[string]any{"title": "Refactor v2", "state": "COMPLETED"})
	if p := r.JSON(t); r.Status != http.StatusOK || p["title"] != "Refactor v2" || p["state"] != "COMPLETED" {
		t.Errorf("patch: got %d %v", r.Status, p)
	}
	if tasks := list(d.do("GET", "/tasks", nil).JSON(t), "tasks"); len(tasks) != 2 {
		t.Errorf("got %d tasks, want 2 (one created, one implicit)", len(tasks))
	}
}

func TestAgentsListsDemoAndDetectedAgents(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	d.waitTurn(sid, d.prompt(sid, "/echo probe", ""))
	agents := list(d.do("GET", "/agents", nil).JSON(t), "agents")
	byID := map[string]map[string]any{}
	for _, a := range agents {
		byID[a["id"].(string)] = a
	}
	demo := byID["demo"]
	if demo == nil || demo["available"] != true {
		t.Fatalf("got demo %v, want available", demo)
	}
	caps, _ := demo["capabilities"].(map[string]any)
	if caps == nil || caps["loadSession"] != true || caps["resume"] != true {
		t.Errorf("got demo capabilities %v, want loadSession and resume after a run", caps)
	}
	for _, id := range []string{"claude", "codex", "gemini", "qwen", "opencode", "copilot", "auggie"} {
		a := byID[id]
		if a == nil || a["available"] != false || a["unavailableReason"] == nil {
			t.Errorf("got %s = %v, want listed unavailable with a reason", id, a)
		}
	}
}
