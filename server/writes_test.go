package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/store"
)

// TestTaskWritesWaitForTheWriterNotTheLock: while the event writer holds
// SQLite's write lock (a long batch under load), a task write queues behind
// it and succeeds once the batch commits. A write beside the writer would
// wait on the lock instead and fail with "database is locked" after
// busy_timeout.
func TestTaskWritesWaitForTheWriterNotTheLock(t *testing.T) {
	d := startDaemon(t, daemonOptions{})
	task := d.do("POST", "/tasks", map[string]any{"title": "before"})
	if task.Status != http.StatusCreated {
		t.Fatalf("create task: got %d %s", task.Status, task.Body)
	}
	taskID := task.JSON(t)["id"].(string)
	cases := []struct {
		name, method, path string
		body               map[string]any
		want               int
	}{
		{"create a task", "POST", "/tasks", map[string]any{"title": "under load"}, http.StatusCreated},
		{"update a task", "PATCH", "/tasks/" + taskID, map[string]any{"title": "renamed", "state": "IN_PROGRESS"}, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			d.Writer.Submit(func(*store.Store, events.Emit) error {
				close(held) // the batch's transaction holds the write lock
				<-release
				return nil
			})
			<-held
			done := make(chan result, 1)
			go func() { done <- d.sendAsync(tc.method, tc.path, tc.body) }()
			released := false
			var r result
		wait:
			for {
				select {
				case r = <-done:
					break wait // answered while the lock was held: it did not queue
				case <-time.After(5 * time.Millisecond):
					if !released && d.Writer.Queued() > 0 {
						close(release) // the write queued behind the batch
						released = true
					}
				}
			}
			if !released {
				close(release)
			}
			if r.err != nil || r.status != tc.want {
				t.Fatalf("%s %s while the writer holds the lock: got %d %s (%v), want %d", tc.method, tc.path, r.status, r.body, r.err, tc.want)
			}
		})
	}
}

type result struct {
	status int
	body   []byte
	err    error
}

// sendAsync is a plain authenticated request, safe to call off the test goroutine.
func (d *daemon) sendAsync(method, path string, body any) result {
	b, err := json.Marshal(body)
	if err != nil {
		return result{err: err}
	}
	req, err := http.NewRequest(method, d.URL+path, bytes.NewReader(b))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: out, err: err}
}
