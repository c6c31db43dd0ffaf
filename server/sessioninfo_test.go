package server_test

import (
	"net/http"
	"testing"
)

// TestSessionTitlesArchiveAndSearch walks a session's title from its
// first prompt to the user's, archives it, finds it by what was said, and
// renames and brings it back after its close: every change an event of
// its log, served by GET /session/{id} and GET /sessions, and the log
// read back to its end after session.closed.
func TestSessionTitlesArchiveAndSearch(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(map[string]any{"initialPrompt": text("Find the flaky kumquat test\nand fix it"), "promptId": "p1"})
	d.waitTurn(sid, "p1")
	other, _ := d.createSession(map[string]any{"title": "Mine from the start"})

	get := func(id string) map[string]any {
		t.Helper()
		r := d.do("GET", "/session/"+id, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("get session: got %d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	wantTitle := func(id, title, source string) {
		t.Helper()
		s := get(id)
		if s["title"] != title || s["titleSource"] != source {
			t.Errorf("got title %v from %v, want %q from %s", s["title"], s["titleSource"], title, source)
		}
		if s["lastActivityAt"] == nil {
			t.Errorf("got no lastActivityAt in %v", s)
		}
	}
	list := func(query string) []string {
		t.Helper()
		r := d.do("GET", "/sessions?"+query, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("list %s: got %d %s", query, r.Status, r.Body)
		}
		var out []string
		for _, s := range r.JSON(t)["sessions"].([]any) {
			out = append(out, s.(map[string]any)["id"].(string))
		}
		return out
	}
	patch := func(body map[string]any, want int) map[string]any {
		t.Helper()
		r := d.do("PATCH", "/session/"+sid, body)
		if r.Status != want {
			t.Fatalf("patch %v: got %d %s, want %d", body, r.Status, r.Body, want)
		}
		return r.JSON(t)
	}

	wantTitle(sid, "Find the flaky kumquat test", "prompt")
	wantTitle(other, "Mine from the start", "user")
	d.prompt(sid, "/echo a later prompt titles nothing", "p2")
	d.waitTurn(sid, "p2")
	wantTitle(sid, "Find the flaky kumquat test", "prompt")

	for _, tc := range []struct{ name, query, want string }{
		{"by the title", "q=kumquat", sid},
		{"by what the agent said", "q=later+prompt+titles", sid},
		{"by a prefix", "q=kumq", sid},
	} {
		if got := list(tc.query); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: got %v, want [%s]", tc.name, got, tc.want)
		}
	}

	if s := patch(map[string]any{"title": "  Kumquat\nhunt  "}, http.StatusOK); s["title"] != "Kumquat hunt" || s["titleSource"] != "user" {
		t.Errorf("rename: got %v from %v, want Kumquat hunt from user", s["title"], s["titleSource"])
	}
	// A NUL (which PostgreSQL's TEXT refuses) is no part of a title.
	if s := patch(map[string]any{"title": "Kumquat\u0000hunt"}, http.StatusOK); s["title"] != "Kumquat hunt" {
		t.Errorf("rename with a NUL: got %q, want Kumquat hunt", s["title"])
	}
	patch(map[string]any{"archived": true}, http.StatusOK)
	if got := list(""); len(got) != 1 || got[0] != other {
		t.Errorf("default list: got %v, want only %s (the other is archived)", got, other)
	}
	if got := list("archived=true&q=hunt"); len(got) != 1 || got[0] != sid {
		t.Errorf("archived=true&q=hunt: got %v, want [%s]", got, sid)
	}
	for _, bad := range []map[string]any{{"title": ""}, {"title": "   "}, {"bogus": 1}} {
		patch(bad, http.StatusBadRequest)
	}

	if r := d.do("DELETE", "/session/"+sid, nil); r.Status != http.StatusOK {
		t.Fatalf("close: got %d %s", r.Status, r.Body)
	}
	patch(map[string]any{"title": "Kumquat hunt, done", "archived": false}, http.StatusOK)
	wantTitle(sid, "Kumquat hunt, done", "user")
	log := d.sessionEvents(sid)
	var tail []string
	for _, f := range log[max(0, len(log)-3):] {
		tail = append(tail, f.Event)
	}
	if want := []string{"session.closed", "session.title_changed", "session.archived"}; len(tail) != 3 || tail[0] != want[0] || tail[1] != want[1] || tail[2] != want[2] {
		t.Errorf("the closed session's log ends with %v, want %v", tail, want)
	}
	d.checkOneTruth(sid)
}
