package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/store/storetest"
)

// holdWriter makes the event writer's current batch wait until the
// returned release is called, so that what is submitted meanwhile queues
// for the next batch.
func (d *daemon) holdWriter() (release func()) {
	d.t.Helper()
	held, released := make(chan struct{}), make(chan struct{})
	d.Writer.Submit(func(*store.Store, events.Emit) error {
		close(held)
		<-released
		return nil
	})
	<-held
	return func() { close(released) }
}

// waitQueued waits until n ops wait for the writer.
func (d *daemon) waitQueued(n int) {
	d.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for d.Writer.Queued() < n {
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out waiting for %d queued writes (have %d)", n, d.Writer.Queued())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSessionCreatesSurviveAFailedNeighbourInTheirBatch: POST /session
// requests whose changes share a group-commit batch with a change that
// fails all answer 201 with their task. The writer rolls the batch back and
// redoes each change alone; a change that had captured and changed its
// own variables (the task id) used to hit the foreign key on the redo and
// answer 404 task_not_found.
func TestSessionCreatesSurviveAFailedNeighbourInTheirBatch(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	cases := []struct {
		name string
		body func(cwd string) map[string]any
	}{
		{"new task", func(cwd string) map[string]any { return map[string]any{"agentProfileId": "demo", "cwd": cwd} }},
		{"new task and initial prompt", func(cwd string) map[string]any {
			return map[string]any{"agentProfileId": "demo", "cwd": cwd, "initialPrompt": text("hello")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			release := d.holdWriter()
			results := make(chan result, n)
			for range n {
				body := tc.body(t.TempDir())
				go func() { results <- d.sendAsync("POST", "/session", body) }()
			}
			d.waitQueued(n)
			// Another client's change in the same batch fails.
			failing := d.Writer.Submit(func(*store.Store, events.Emit) error { return errors.New("injected failure") })
			release()
			if _, err := failing.Wait(context.Background()); err == nil {
				t.Fatal("injected failing change: got nil error, want it failed")
			}
			for range n {
				r := <-results
				if r.err != nil || r.status != http.StatusCreated {
					t.Fatalf("POST /session beside a failed change: got %d %s (%v), want 201", r.status, r.body, r.err)
				}
				sess := response{Status: r.status, Body: r.body}.JSON(t)
				taskID, _ := sess["taskId"].(string)
				if task := d.do("GET", "/tasks/"+taskID, nil); task.Status != http.StatusOK {
					t.Fatalf("GET /tasks/%s of a created session: got %d %s, want 200", taskID, task.Status, task.Body)
				}
				d.checkOneTruth(sess["id"].(string))
			}
		})
	}
}

// injectFailure makes the database refuse writes that match when (an SQL
// condition on NEW in a BEFORE trigger of table), as a full disk or a
// violated constraint would; remove takes the fault away.
func (d *daemon) injectFailure(table, event, when string) (remove func()) {
	d.t.Helper()
	return storetest.Fault(d.t, d.Dir, "test_fault_"+table, event, table, when)
}

// metric returns the value of one sample of GET /metrics ("" if absent).
func (d *daemon) metric(sample string) string {
	d.t.Helper()
	r := d.do("GET", "/metrics", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// TestFailedTurnEndIsNotSilent: when the write recording a turn's outcome
// fails, the failure is logged with the session, counted in /metrics, and
// the actor reloads the session from the store and ends the turn as failed
// with store_write_failed: clients see turn.failed, status and transcript
// agree, and the session takes the next prompt. It used to believe the
// turn completed while its row said running, with nothing logged.
func TestFailedTurnEndIsNotSilent(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	d := startDaemon(t, daemonOptions{logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))})
	sid, _ := d.createSession(nil)
	remove := d.injectFailure("turns", "UPDATE OF state", "NEW.state = 'completed'")
	pid := d.prompt(sid, "hello", "")
	turn := d.waitTurn(sid, pid)
	if turn["state"] != "failed" {
		t.Fatalf("turn whose completion could not be stored: got state %v, want failed: %v", turn["state"], turn)
	}
	if e, _ := turn["error"].(map[string]any); e["code"] != "store_write_failed" {
		t.Fatalf("turn error: got %v, want code store_write_failed", turn["error"])
	}
	d.waitIdle(sid) // the transcript's turns agree
	var ends []string
	for _, e := range d.sessionLog(sid) {
		if e.PromptID == pid && strings.HasPrefix(e.Type, "turn.") && e.Type != events.TurnQueued && e.Type != events.TurnStarted && e.Type != events.TurnDelivered {
			var p map[string]any
			_ = json.Unmarshal(e.Payload, &p)
			ends = append(ends, fmt.Sprintf("%s %v", e.Type, p["code"]))
		}
	}
	if want := []string{"turn.failed store_write_failed"}; !slices.Equal(ends, want) {
		t.Fatalf("terminal events of the turn: got %q, want %q", ends, want)
	}
	if st := d.status(sid); st["state"] == "RUNNING" {
		t.Fatalf("status after the failed turn: got %v, want not RUNNING", st["state"])
	}
	if got := d.metric(`tether_event_writer_failures_total{code="store_write_failed"}`); got == "" || got == "0" {
		t.Fatalf("failure counter: got %q, want at least 1", got)
	}
	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if !strings.Contains(log, "write failed") || !strings.Contains(log, "session="+sid) {
		t.Fatalf("daemon log: want a write failed line naming session %s, got:\n%s", sid, log)
	}
	remove()
	next := d.prompt(sid, "hello again", "")
	if got := d.waitTurn(sid, next); got["state"] != "completed" {
		t.Fatalf("next turn after the failure: got %v, want completed", got["state"])
	}
	d.checkOneTruth(sid)
}

// TestFailedWritesAnswer5xx: a request whose change cannot be stored gets
// a 500 problem with code store_write_failed, never a success or a vague
// internal error, and nothing of the change is left behind.
func TestFailedWritesAnswer5xx(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	cases := []struct {
		name         string
		table, event string
		when         string
		method, path string
		body         func() map[string]any
	}{
		{"create a session", "tasks", "INSERT", "NEW.title = 'unstorable'", "POST", "/session", func() map[string]any {
			return map[string]any{"agentProfileId": "demo", "cwd": t.TempDir(), "title": "unstorable"}
		}},
		{"prompt", "turns", "INSERT", "NEW.prompt LIKE '%unstorable%'", "POST", "/session/" + sid + "/prompt", func() map[string]any {
			return map[string]any{"prompt": text("unstorable")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			remove := d.injectFailure(tc.table, tc.event, tc.when)
			defer remove()
			r := d.do(tc.method, tc.path, tc.body())
			if r.Status != http.StatusInternalServerError || r.JSON(t)["code"] != "store_write_failed" {
				t.Fatalf("%s %s that cannot be stored: got %d %s, want 500 store_write_failed", tc.method, tc.path, r.Status, r.Body)
			}
		})
	}
	if n := len(list(d.transcript(sid), "turns")); n != 0 {
		t.Fatalf("turns after a prompt that could not be stored: got %d, want 0", n)
	}
	d.checkOneTruth(sid)
}

// failuresAtLeast waits until the event writer has counted n failed
// writes: the refused write and the repairs the session tried after it.
func (d *daemon) failuresAtLeast(n int) {
	d.t.Helper()
	d.waitFor(fmt.Sprintf("%d failed writes", n), func() bool {
		v, _ := strconv.Atoi(d.metric(`tether_event_writer_failures_total{code="store_write_failed"}`))
		return v >= n
	})
}

// TestRefusedChangesAreRecordedOnceTheStoreAcceptsWrites: what a session
// lived through while the store refused its writes, and refused the
// repairs tried after them too, is in its log once the store takes writes
// again: a turn's end (failed with store_write_failed) and a user's answer
// to a permission request (selected). The repairs used to be tried once:
// the turn stayed running and the request pending for good.
func TestRefusedChangesAreRecordedOnceTheStoreAcceptsWrites(t *testing.T) {
	t.Run("a turn's end", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{})
		sid, _ := d.createSession(nil)
		remove := d.injectFailure("turns", "UPDATE OF state", "NEW.state IN ('completed', 'failed')")
		pid := d.prompt(sid, "hello", "")
		d.failuresAtLeast(2) // the end, and the repair recording it failed
		remove()
		turn := d.waitTurn(sid, pid)
		if e, _ := turn["error"].(map[string]any); turn["state"] != "failed" || e["code"] != "store_write_failed" {
			t.Fatalf("turn whose end the store refused: got %v (error %v), want failed with store_write_failed", turn["state"], turn["error"])
		}
		var ends []string
		for _, e := range d.sessionLog(sid) {
			if e.PromptID == pid && (e.Type == events.TurnFailed || e.Type == events.TurnCompleted) {
				ends = append(ends, e.Type)
			}
		}
		if want := []string{events.TurnFailed}; !slices.Equal(ends, want) {
			t.Fatalf("terminal events of the turn: got %q, want %q", ends, want)
		}
		if st := d.status(sid); st["state"] != "WAITING_FOR_INPUT" {
			t.Fatalf("status: got %v, want WAITING_FOR_INPUT", st["state"])
		}
		d.checkOneTruth(sid)
	})
	t.Run("a permission's answer", func(t *testing.T) {
		d := startDaemon(t, daemonOptions{})
		sid, _ := d.createSession(nil)
		id := d.askedPermission(sid)
		remove := d.injectFailure("permission_requests", "UPDATE", "1 = 1")
		r := d.do("POST", "/session/"+sid+"/permission/"+id, map[string]any{"optionId": "allow_once"})
		if r.Status != http.StatusInternalServerError || r.JSON(t)["code"] != "store_write_failed" {
			t.Fatalf("answer that cannot be stored: got %d %s, want 500 store_write_failed", r.Status, r.Body)
		}
		d.failuresAtLeast(2) // the answer, and the repair recording it failed
		remove()
		d.waitFor("the answer to be recorded", func() bool { return len(list(d.transcript(sid), "pendingPermissions")) == 0 })
		if resolved, want := d.permissionOutcomes(sid), []string{"selected allow_once"}; !slices.Equal(resolved, want) {
			t.Fatalf("permission.resolved events: got %q, want %q", resolved, want)
		}
		d.checkOneTruth(sid)
	})
}

// TestClosedSessionsRefusedCancelIsRecordedAtTheNextStart: a session
// closed while the store refuses its permission request's update keeps
// the request pending in its log, and its actor retires: nothing of the
// session lives on to record it. The next daemon records it cancelled
// (as the close meant) before it serves, and a request to the session
// finds it so. It used to stay pending for good: start-up looked only at
// active sessions, and an actor loaded for a closed session held none.
func TestClosedSessionsRefusedCancelIsRecordedAtTheNextStart(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	sid, _ := d.createSession(nil)
	d.askedPermission(sid)
	remove := d.injectFailure("permission_requests", "UPDATE", "1 = 1")
	if r := d.do("DELETE", "/session/"+sid, nil); r.Status >= 500 && r.JSON(t)["code"] != "store_write_failed" {
		t.Fatalf("close whose cancel cannot be stored: got %d %s, want 2xx or 500 store_write_failed", r.Status, r.Body)
	}
	// Stopped with the store still refusing: whatever the retired actor
	// tried was refused.
	d.stop()
	remove()
	d = d.restart(daemonOptions{})
	if resolved, want := d.permissionOutcomes(sid), []string{"cancelled"}; !slices.Equal(resolved, want) {
		t.Fatalf("permission.resolved events after the restart: got %q, want %q", resolved, want)
	}
	if n := len(list(d.transcript(sid), "pendingPermissions")); n != 0 {
		t.Fatalf("pending permissions after the restart: got %d, want 0", n)
	}
	r := d.do("POST", "/session/"+sid+"/prompt", map[string]any{"prompt": text("after the close")})
	if r.Status != http.StatusConflict || r.JSON(t)["code"] != "session_terminal" {
		t.Fatalf("prompt to the closed session: got %d %s, want 409 session_terminal", r.Status, r.Body)
	}
	if n := len(list(d.transcript(sid), "pendingPermissions")); n != 0 {
		t.Fatalf("pending permissions once the session was loaded: got %d, want 0", n)
	}
}

// askedPermission prompts session sid's demo agent to ask a permission
// and returns the request's id once it is pending.
func (d *daemon) askedPermission(sid string) string {
	d.t.Helper()
	d.prompt(sid, "/permission", "p1")
	var pending []map[string]any
	d.waitFor("a pending permission", func() bool {
		pending = list(d.transcript(sid), "pendingPermissions")
		return len(pending) == 1
	})
	id, _ := pending[0]["id"].(string)
	return id
}

// permissionOutcomes are the permission.resolved events of session sid's
// log, in order, as "state" or "state optionId".
func (d *daemon) permissionOutcomes(sid string) []string {
	d.t.Helper()
	var out []string
	for _, e := range d.sessionLog(sid) {
		if e.Type != events.PermissionResolved {
			continue
		}
		var p struct{ State, OptionID string }
		_ = json.Unmarshal(e.Payload, &p)
		if p.OptionID != "" {
			p.State += " " + p.OptionID
		}
		out = append(out, p.State)
	}
	return out
}
