package sessions

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/internal/events"
	"github.com/tether/tether/internal/runtimes"
	"github.com/tether/tether/internal/session"
	"github.com/tether/tether/internal/store"
	"github.com/tether/tether/internal/terminal"
	"github.com/tether/tether/internal/workspace"
)

// oldHost is an executor host that predates held commands: it keeps a
// command's newest output only, so a follower that reads late finds the
// start of what it asked for gone. Its one command wrote "abcd", then six
// bytes the follower never sees, then "klmn", and exited 3.
type oldHost struct{ *fakeHost }

func (h oldHost) Workspace(_ context.Context, _ string, req workspace.Request) (workspace.Result, error) {
	switch req.Op {
	case workspace.OpCommandRun:
		return workspace.Result{Terminal: &terminal.Info{ID: "cmd"}}, nil
	case workspace.OpTerminalRead:
		code := 3
		if req.Offset < 4 {
			return workspace.Result{Output: &terminal.Chunk{Offset: req.Offset, End: 4, Data: []byte("abcd")[req.Offset:]}}, nil
		}
		return workspace.Result{Output: &terminal.Chunk{Offset: 10, End: 14, Data: []byte("klmn"), Exited: true, ExitCode: &code}}, nil
	}
	return workspace.Result{Terminal: &terminal.Info{ID: "cmd"}}, nil
}

type oldHostExecutors struct{ host oldHost }

func (x oldHostExecutors) Choose(string, string) (session.Runtime, string, error) {
	return session.RuntimeDetached, "old", nil
}
func (x oldHostExecutors) Runtime(session.Runtime, string) (runtimes.Runtime, error) {
	return x.host, nil
}
func (x oldHostExecutors) Hosts(context.Context) []runtimes.ExecutorHost { return nil }

// TestCommandOverrunIsMarked: output an executor dropped before the
// follower read it is recorded as command.truncated, reason overrun, with
// where and how many bytes, never as a silent jump in the offsets; the
// exit code and the totals follow.
func TestCommandOverrunIsMarked(t *testing.T) {
	r := newFakeRig(t)
	host := oldHost{&fakeHost{fakeRuntime: r.rt, attaches: make(chan fakeAttach, 4)}}
	r.mgr = New(r.st, r.w, fakeProfiles{}, Config{Runtime: r.rt, Executors: oldHostExecutors{host}, Logger: slog.New(slog.DiscardHandler)})
	s := r.readySession(t)
	ctx := context.Background()
	c, err := r.mgr.RunCommand(ctx, s.sess.ID, "a command")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := r.st.GetCommand(ctx, s.sess.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != store.CommandRunning {
			if got.ExitCode == nil || *got.ExitCode != 3 || got.OutputBytes != 8 || got.DroppedBytes != 6 || got.OutputOffset != 14 {
				t.Errorf("command: got %+v, want exit 3, 8 bytes recorded, 6 dropped, offset 14", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	type ev struct {
		Type string
		Data map[string]any
	}
	want := []ev{
		{events.CommandOutput, map[string]any{"offset": 0.0, "text": "abcd"}},
		{events.CommandTruncated, map[string]any{"offset": 4.0, "reason": "overrun", "bytes": 6.0}},
		{events.CommandOutput, map[string]any{"offset": 10.0, "text": "klmn"}},
		{events.CommandExited, map[string]any{"state": "exited", "exitCode": 3.0, "outputBytes": 8.0, "droppedBytes": 6.0}},
	}
	evs, err := r.st.ListSessionEvents(ctx, s.sess.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []ev
	for _, e := range evs {
		var p map[string]any
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p["commandId"] != c.ID || e.Type == events.CommandStarted {
			continue
		}
		for _, k := range []string{"sessionId", "taskId", "commandId"} {
			delete(p, k)
		}
		got = append(got, ev{e.Type, p})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events: got\n%v\nwant\n%v", got, want)
	}
}
