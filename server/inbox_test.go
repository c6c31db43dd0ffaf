package server_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// inbox reads every page of GET /inbox, limit items a page, and returns
// the items and the first page's cursor.
func (d *daemon) inbox(limit int) ([]map[string]any, string) {
	d.t.Helper()
	var items []map[string]any
	cursor, token := "", ""
	for range 100 {
		path := "/inbox?limit=" + strconv.Itoa(limit)
		if token != "" {
			path += "&pageToken=" + url.QueryEscape(token)
		}
		r := d.do("GET", path, nil)
		if r.Status != http.StatusOK {
			d.t.Fatalf("GET %s: got %d %s, want 200", path, r.Status, r.Body)
		}
		page := r.JSON(d.t)
		if cursor == "" {
			cursor, _ = page["cursor"].(string)
		}
		items = append(items, list(page, "items")...)
		next, _ := page["nextPageToken"].(string)
		if next == "" {
			return items, cursor
		}
		token = next
	}
	d.t.Fatal("GET /inbox: more than 100 pages")
	return nil, ""
}

// inboxKinds maps each item's session to its kind.
func inboxKinds(items []map[string]any) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		out[it["session"].(map[string]any)["id"].(string)] = it["kind"].(string)
	}
	return out
}

// TestInbox: GET /inbox lists what waits for a person across sessions (a
// pending permission, an interrupted turn, a failed turn, an agent that
// needs credentials), newest first and paged; nothing of a session whose
// turn completed or that is archived. Each item leaves once what it
// waits for is done, the global stream says when, and the inbox holds
// across a restart of the daemon.
func TestInbox(t *testing.T) {
	demo := agentProfile{id: "inboxdemo", stateDir: t.TempDir()}
	keyless := agentProfile{id: "keyless", stateDir: t.TempDir(), flags: []string{"--auth-method", "demo-key"}}
	opts := daemonOptions{agentsYAML: profilesYAML(t, demo, keyless)}
	d := startDaemon(t, opts)
	on := map[string]any{"agentProfileId": "inboxdemo"}

	done, _ := d.createSession(on)
	d.waitTurn(done, d.prompt(done, "/echo fine", "done"))
	archived, _ := d.createSession(on)
	d.waitTurn(archived, d.prompt(archived, "/error -32603 gone", "archived"))
	if r := d.do("PATCH", "/session/"+archived, map[string]any{"archived": true}); r.Status != http.StatusOK {
		t.Fatalf("archive: got %d %s", r.Status, r.Body)
	}

	failed, _ := d.createSession(on)
	if turn := d.waitTurn(failed, d.prompt(failed, "/error -32603 model overloaded", "f1")); turn["state"] != "failed" {
		t.Fatalf("the failing turn: got %v, want failed", turn["state"])
	}
	crashed, _ := d.createSession(on)
	d.crashTurn(crashed, "/crash", "c1")
	r := d.createRaw("keyless", "")
	if r.Status != http.StatusCreated {
		t.Fatalf("create keyless: got %d %s", r.Status, r.Body)
	}
	locked := r.JSON(t)["id"].(string)
	d.waitFor("the keyless start to fail", func() bool { return d.status(locked)["errorCode"] == "agent_auth_required" })
	asking, _ := d.createSession(on)
	ask := d.prompt(asking, "/permission", "ask")
	d.waitFor("a pending permission", func() bool { return len(list(d.transcript(asking), "pendingPermissions")) == 1 })

	want := map[string]string{asking: "permission", locked: "needs_credentials", crashed: "interrupted_turn", failed: "failed_turn"}
	whole, cursor := d.inbox(50)
	if got := inboxKinds(whole); !maps.Equal(got, want) {
		t.Fatalf("inbox: got %v, want %v", got, want)
	}
	for i, it := range whole {
		if i > 0 && it["at"].(string) > whole[i-1]["at"].(string) {
			t.Errorf("inbox item %d (%s) is newer than the one before it: not newest first", i, it["id"])
		}
		switch it["kind"] {
		case "permission":
			p := it["permission"].(map[string]any)
			if p["state"] != "pending" || p["promptId"] != "ask" || len(list(p, "options")) != 3 {
				t.Errorf("the permission item: got %v, want the pending request of turn ask with 3 options", p)
			}
		case "interrupted_turn", "failed_turn":
			if it["turn"] == nil {
				t.Errorf("%s item: no turn", it["kind"])
			}
		case "needs_credentials":
			if ex := it["session"].(map[string]any)["executor"].(map[string]any); ex["errorCode"] != "agent_auth_required" {
				t.Errorf("needs_credentials item: executor %v", ex)
			}
		}
	}
	paged, _ := d.inbox(1)
	if !slices.EqualFunc(paged, whole, func(a, b map[string]any) bool { return a["id"] == b["id"] }) {
		t.Errorf("one item a page: got %v, want the same items in the same order as %v", ids(paged), ids(whole))
	}
	if r := d.do("GET", "/inbox?pageToken=nonsense", nil); r.Status != http.StatusBadRequest {
		t.Errorf("a bad page token: got %d, want 400", r.Status)
	}
	if r := d.do("GET", "/inbox?limit=0", nil); r.Status != http.StatusBadRequest {
		t.Errorf("limit 0: got %d, want 400", r.Status)
	}

	// Answered from the inbox: the item's session and request id.
	var perm map[string]any
	for _, it := range whole {
		if it["kind"] == "permission" {
			perm = it
		}
	}
	path := "/session/" + asking + "/permission/" + perm["permission"].(map[string]any)["id"].(string)
	if r := d.do("POST", path, map[string]any{"optionId": "allow_once"}); r.Status != http.StatusOK {
		t.Fatalf("answer from the inbox: got %d %s", r.Status, r.Body)
	}
	d.waitTurn(asking, ask)
	d.waitTurn(failed, d.prompt(failed, "/echo again", "f2"))
	delete(want, asking)
	delete(want, failed)
	if got := inboxKinds(first(d.inbox(50))); !maps.Equal(got, want) {
		t.Fatalf("after the answer and a new turn: got %v, want %v", got, want)
	}
	// The global stream said so, from the inbox's cursor on.
	var seen []string
	for _, f := range d.replayLog("/events?follow=false&cursor=" + url.QueryEscape(cursor)) {
		var e map[string]any
		if err := json.Unmarshal([]byte(f.Data), &e); err != nil {
			t.Fatal(err)
		}
		if e["sessionId"] == asking || e["sessionId"] == failed {
			seen = append(seen, f.Event)
		}
	}
	for _, typ := range []string{"permission.resolved", "turn.completed", "turn.started"} {
		if !slices.Contains(seen, typ) {
			t.Errorf("the global stream after the inbox's cursor: got %v, want %s among them", seen, typ)
		}
	}

	// What waits still waits after a restart.
	d.stop()
	d = d.restart(opts)
	if got := inboxKinds(first(d.inbox(50))); !maps.Equal(got, want) {
		t.Fatalf("after a restart: got %v, want %v", got, want)
	}
	// A continuation takes the interrupted turn out.
	if r := d.continueSession(crashed, nil); r.Status != http.StatusAccepted {
		t.Fatalf("continue: got %d %s", r.Status, r.Body)
	}
	delete(want, crashed)
	d.waitFor("the continuation to start", func() bool { return maps.Equal(inboxKinds(first(d.inbox(50))), want) })
}

func first(items []map[string]any, _ string) []map[string]any { return items }

func ids(items []map[string]any) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it["id"]
	}
	return out
}
