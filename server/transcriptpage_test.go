package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestTranscriptPages reads a demo-agent session's transcript a page at a
// time over HTTP, the latest turns first, while its last turn waits for a
// permission: the pages hold every turn, message and tool call of the
// whole transcript once and in order, each page the session's pending
// request and cursor, and bad paging parameters are 400s with a code.
func TestTranscriptPages(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	for _, p := range []string{"/echo one", "/tool", "/thought", "what does the readme say?", "/echo five"} {
		if turn := d.waitTurn(sid, d.prompt(sid, p, "")); turn["state"] != "completed" {
			t.Fatalf("%s: got %v, want completed", p, turn)
		}
	}
	asking := d.prompt(sid, "/permission", "")
	d.waitFor("the permission request", func() bool { return len(list(d.transcript(sid), "pendingPermissions")) == 1 })

	whole := d.transcript(sid)
	if _, ok := whole["nextPageToken"]; ok {
		t.Errorf("whole transcript: got nextPageToken %v, want none", whole["nextPageToken"])
	}
	var pages []map[string]any
	path := "/session/" + sid + "/transcript?limit=2"
	for {
		r := d.do("GET", path, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: got %d, want 200: %s", path, r.Status, r.Body)
		}
		p := r.JSON(t)
		pages = append(pages, p)
		if p["cursor"] != whole["cursor"] || len(list(p, "pendingPermissions")) != 1 {
			t.Errorf("page %d: got cursor %v and %d pending requests, want %v and 1", len(pages), p["cursor"], len(list(p, "pendingPermissions")), whole["cursor"])
		}
		next, ok := p["nextPageToken"].(string)
		if !ok {
			break
		}
		if len(list(p, "turns")) != 2 {
			t.Errorf("page %d: got %d turns, want 2", len(pages), len(list(p, "turns")))
		}
		path = "/session/" + sid + "/transcript?limit=2&pageToken=" + url.QueryEscape(next)
	}
	if len(pages) != 3 {
		t.Fatalf("got %d pages of 2 turns of 6, want 3", len(pages))
	}
	if last := list(pages[0], "turns"); last[len(last)-1]["promptId"] != asking || last[len(last)-1]["seq"] != 6.0 {
		t.Errorf("first page: got latest turn %v, want %s, seq 6", last[len(last)-1], asking)
	}
	slices.Reverse(pages)
	for _, key := range []string{"turns", "messages", "toolCalls"} {
		var got []string
		for _, p := range pages {
			for _, x := range list(p, key) {
				b, _ := json.Marshal(x)
				got = append(got, string(b))
			}
		}
		var want []string
		for _, x := range list(whole, key) {
			b, _ := json.Marshal(x)
			want = append(want, string(b))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s across the pages:\n%v\nwant the whole transcript's\n%v", key, got, want)
		}
	}

	for _, c := range []struct{ name, query, code string }{
		{"limit 0", "limit=0", "validation_failed"},
		{"limit over 500", "limit=501", "validation_failed"},
		{"a token without limit", "pageToken=eyJzIjoyfQ", "invalid_request"},
		{"a token that is no token", "limit=2&pageToken=nope", "invalid_request"},
		{"a token of no turn", "limit=2&pageToken=eyJzIjo5OX0", "invalid_request"},
	} {
		r := d.do("GET", "/session/"+sid+"/transcript?"+c.query, nil)
		if got := fmt.Sprint(r.JSON(t)["code"]); r.Status != http.StatusBadRequest || got != c.code {
			t.Errorf("%s: got %d %s, want 400 %s: %s", c.name, r.Status, got, c.code, r.Body)
		}
	}
}
