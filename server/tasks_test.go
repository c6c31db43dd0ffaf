package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
)

// globalFrames reads the global stream from cursor to its head.
func (d *daemon) globalFrames(cursor, types string) []sseFrame {
	d.t.Helper()
	q := "/events?follow=false"
	if cursor != "" {
		q += "&cursor=" + cursor
	}
	if types != "" {
		q += "&types=" + types
	}
	return durableFrames(d.openStream(q, nil).All())
}

// listCursor is the cursor of a list response, which it must have.
func listCursor(t *testing.T, r response) string {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("got %d, want 200: %s", r.Status, r.Body)
	}
	c, _ := r.JSON(t)["cursor"].(string)
	if _, err := events.ParseCursor(c); err != nil {
		t.Fatalf("list cursor %q: %v (body %s)", c, err, r.Body)
	}
	return c
}

func TestTaskWritesEmitGlobalEvents(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	from := listCursor(t, d.do("GET", "/tasks", nil))

	r := d.do("POST", "/tasks", map[string]any{"title": "first", "workspace": d.Dir})
	if r.Status != http.StatusCreated {
		t.Fatalf("create task: got %d, want 201: %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	for _, patch := range []map[string]any{
		{"title": "renamed"},
		{"state": "COMPLETED"},
		{"state": "COMPLETED", "title": "renamed"}, // changes nothing: no event
		{"state": "CANCELLED", "title": "again"},
	} {
		if r := d.do("PATCH", "/tasks/"+id, patch); r.Status != http.StatusOK {
			t.Fatalf("patch %v: got %d, want 200: %s", patch, r.Status, r.Body)
		}
	}

	frames := d.globalFrames(from, "")
	type ev struct{ typ, detail string }
	var got []ev
	for _, f := range frames {
		m := f.JSON(t)
		if m["taskId"] != id {
			t.Errorf("%s: got taskId %v, want %s", f.Event, m["taskId"], id)
		}
		switch f.Event {
		case events.TaskCreated:
			got = append(got, ev{f.Event, fmt.Sprintf("%v %v %v", m["title"], m["state"], m["workspace"] != nil)})
		case events.TaskUpdated:
			got = append(got, ev{f.Event, fmt.Sprint(m["title"])})
		case events.TaskStateChanged:
			got = append(got, ev{f.Event, fmt.Sprintf("%v->%v", m["previousState"], m["state"])})
		default:
			got = append(got, ev{f.Event, ""})
		}
	}
	want := []ev{
		{events.TaskCreated, "first TODO true"},
		{events.TaskUpdated, "renamed"},
		{events.TaskStateChanged, "TODO->COMPLETED"},
		{events.TaskUpdated, "again"},
		{events.TaskStateChanged, "COMPLETED->CANCELLED"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got events %v, want %v", got, want)
	}
	if last := listCursor(t, d.do("GET", "/tasks", nil)); last != frames[len(frames)-1].ID {
		t.Errorf("got list cursor %s after the writes, want the last event's id %s", last, frames[len(frames)-1].ID)
	}

	t.Run("session without a task creates one with task.created", func(t *testing.T) {
		at := listCursor(t, d.do("GET", "/tasks", nil))
		sid, _ := d.createSession(nil)
		s := d.do("GET", "/session/"+sid, nil).JSON(t)
		var created []string
		for _, f := range d.globalFrames(at, events.TaskCreated) {
			created = append(created, f.JSON(t)["taskId"].(string))
		}
		if !slices.Equal(created, []string{s["taskId"].(string)}) {
			t.Fatalf("got task.created for %v, want the session's task %v", created, s["taskId"])
		}
	})
}

// TestListCursorStreamsExactlyTheChangesAfterTheList lists while writes
// race the list; for every list, the list plus the global stream from its
// cursor holds each created item exactly once: no gap, no duplicate.
func TestListCursorStreamsExactlyTheChangesAfterTheList(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	const n = 40
	cases := []struct {
		name, path, items, event, key string
		// create makes item i through the daemon's writer.
		create func(i int) error
	}{
		{"tasks", "/tasks", "tasks", events.TaskCreated, "taskId", func(i int) error {
			r, err := d.post("/tasks", fmt.Sprintf(`{"title":"t%d"}`, i))
			if err == nil && r != http.StatusCreated {
				err = fmt.Errorf("create task: got %d, want 201", r)
			}
			return err
		}},
		{"sessions", "/sessions?limit=200", "sessions", events.SessionCreated, "sessionId", func(int) error {
			// As Manager.Create commits a session: its rows and its
			// session.created event in one op (without an agent).
			task, err := d.Store.CreateTask(context.Background(), session.Task{Title: "race"})
			if err != nil {
				return err
			}
			_, err = d.Writer.Do(context.Background(), func(tx *store.Store, emit events.Emit) error {
				s, err := tx.CreateSession(context.Background(), session.Session{TaskID: task.ID, AgentProfileID: "demo", Cwd: d.Dir}, session.Executor{})
				if err == nil {
					emit(events.Draft{SessionID: s.ID, Type: events.SessionCreated, Payload: map[string]any{
						"taskId": task.ID, "agentProfileId": s.AgentProfileID, "cwd": s.Cwd, "state": string(s.State)}})
				}
				return err
			})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				var err error
				for i := 0; i < n && err == nil; i++ {
					err = tc.create(i)
				}
				done <- err
			}()
			type snap struct {
				cursor string
				ids    []string
			}
			var snaps []snap
			for writing := true; writing; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
					writing = false
				default:
				}
				r := d.do("GET", tc.path, nil)
				s := snap{cursor: listCursor(t, r)}
				for _, it := range list(r.JSON(t), tc.items) {
					s.ids = append(s.ids, it["id"].(string))
				}
				snaps = append(snaps, s)
			}
			all := listIDs(t, d, tc.path, tc.items)
			for _, s := range snaps {
				seen := map[string]int{}
				for _, id := range s.ids {
					seen[id]++
				}
				for _, f := range d.globalFrames(s.cursor, tc.event) {
					seen[f.JSON(t)[tc.key].(string)]++
				}
				for _, id := range all {
					if seen[id] != 1 {
						t.Fatalf("list at %s (%d items) + stream from it: got %s %d times, want once", s.cursor, len(s.ids), id, seen[id])
					}
				}
				if len(seen) != len(all) {
					t.Fatalf("list at %s + stream: got %d items, want %d", s.cursor, len(seen), len(all))
				}
			}
			t.Logf("%d lists raced %d writes", len(snaps), n)
		})
	}
}

func listIDs(t *testing.T, d *daemon, path, items string) []string {
	t.Helper()
	var out []string
	for _, it := range list(d.do("GET", path, nil).JSON(t), items) {
		out = append(out, it["id"].(string))
	}
	return out
}

// post sends a JSON body from any goroutine (no t.Fatal) and returns the status.
func (d *daemon) post(path, body string) (int, error) {
	req, err := http.NewRequest("POST", d.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// TestListSessionsCostsFixedQueries: a page of sessions costs the same SQL
// statements whatever its length (no query per session).
func TestListSessionsCostsFixedQueries(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	statements := func() int64 {
		t.Helper()
		before := d.Store.Statements()
		if r := d.do("GET", "/sessions?limit=200", nil); r.Status != http.StatusOK {
			t.Fatalf("list sessions: got %d, want 200: %s", r.Status, r.Body)
		}
		return d.Store.Statements() - before
	}
	var costs []int64
	for _, total := range []int{1, 5, 25} {
		for len(listIDs(t, d, "/sessions?limit=200", "sessions")) < total {
			d.storeSession(session.SessionCreated)
		}
		costs = append(costs, statements())
	}
	if costs[0] != costs[1] || costs[1] != costs[2] {
		t.Fatalf("got %v statements for 1, 5 and 25 sessions, want the same for each", costs)
	}
	if costs[0] > 8 {
		t.Errorf("got %d statements for one page, want a handful", costs[0])
	}
}
