package hostproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

// counter applies commands by counting how often each id ran; its result
// names the run, so a replayed result is told apart from a fresh one.
type counter map[string]int

func (c counter) apply(id string) func() CommandResult {
	return func() CommandResult {
		c[id]++
		return CommandResult{Result: json.RawMessage(fmt.Sprintf(`{"run":%d}`, c[id]))}
	}
}

func TestDedupSequences(t *testing.T) {
	type step struct {
		id          string
		wantApplied bool
		wantRun     int // the run whose result comes back
	}
	cases := []struct {
		name  string
		n     int
		steps []step
		want  counter // how often each id was applied in the end
		len   int
	}{
		{
			name:  "retry gets the first result",
			n:     4,
			steps: []step{{"a", true, 1}, {"a", false, 1}, {"a", false, 1}},
			want:  counter{"a": 1}, len: 1,
		},
		{
			name:  "distinct ids each apply",
			n:     4,
			steps: []step{{"a", true, 1}, {"b", true, 1}, {"a", false, 1}, {"b", false, 1}},
			want:  counter{"a": 1, "b": 1}, len: 2,
		},
		{
			name:  "evicted past n, then applied again",
			n:     2,
			steps: []step{{"a", true, 1}, {"b", true, 1}, {"c", true, 1}, {"a", true, 2}, {"c", false, 1}},
			want:  counter{"a": 2, "b": 1, "c": 1}, len: 2,
		},
		{
			name: "a retry keeps its id recent",
			n:    2,
			// a is looked up again after b, so c evicts b, not a.
			steps: []step{{"a", true, 1}, {"b", true, 1}, {"a", false, 1}, {"c", true, 1}, {"a", false, 1}, {"b", true, 2}},
			want:  counter{"a": 1, "b": 2, "c": 1}, len: 2,
		},
		{
			name:  "n below one remembers one",
			n:     0,
			steps: []step{{"a", true, 1}, {"a", false, 1}, {"b", true, 1}, {"a", true, 2}},
			want:  counter{"a": 2, "b": 1}, len: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, runs := NewDedup(tc.n), counter{}
			for i, s := range tc.steps {
				res, applied, err := d.Do(context.Background(), s.id, runs.apply(s.id))
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, s.id, err)
				}
				want := CommandResult{ID: s.id, Result: json.RawMessage(fmt.Sprintf(`{"run":%d}`, s.wantRun))}
				if applied != s.wantApplied || !reflect.DeepEqual(res, want) {
					t.Fatalf("step %d (%s): got %+v applied=%t; want %s applied=%t", i, s.id, res, applied, want.Result, s.wantApplied)
				}
			}
			if !reflect.DeepEqual(runs, tc.want) {
				t.Fatalf("applications: got %v, want %v", runs, tc.want)
			}
			if d.Len() != tc.len {
				t.Fatalf("Len: got %d, want %d", d.Len(), tc.len)
			}
		})
	}
}

func TestDedupKeepsErrorResults(t *testing.T) {
	d := NewDedup(2)
	fail := func() CommandResult {
		return CommandResult{Error: &ErrorBody{Code: errcode.SessionNotFound, Message: "no such session"}}
	}
	first, _, _ := d.Do(context.Background(), "x", fail)
	again, applied, _ := d.Do(context.Background(), "x", func() CommandResult {
		t.Fatal("a retry of a failed command was applied again")
		return CommandResult{}
	})
	if applied || !reflect.DeepEqual(first, again) || !errcode.Is(again.Err(), errcode.SessionNotFound) {
		t.Fatalf("retry: got %+v applied=%t, want the first failure %+v", again, applied, first)
	}
}

// TestDedupRetryWhileRunning: a retry that arrives while the first copy
// still runs waits for it and gets its result, and a running command is
// never evicted, however many others finish meanwhile.
func TestDedupRetryWhileRunning(t *testing.T) {
	d := NewDedup(1)
	release, started := make(chan struct{}), make(chan struct{})
	first := make(chan CommandResult)
	go func() {
		res, _, _ := d.Do(context.Background(), "slow", func() CommandResult {
			close(started)
			<-release
			return CommandResult{Result: json.RawMessage(`"done"`)}
		})
		first <- res
	}()
	<-started
	for _, id := range []string{"q1", "q2", "q3"} { // each evicts the one before
		if _, _, err := d.Do(context.Background(), id, func() CommandResult { return CommandResult{} }); err != nil {
			t.Fatal(err)
		}
	}
	retry := make(chan CommandResult)
	go func() {
		res, applied, err := d.Do(context.Background(), "slow", func() CommandResult {
			t.Error("the retry was applied while the first copy ran")
			return CommandResult{}
		})
		if applied || err != nil {
			t.Errorf("retry: applied=%t err=%v, want the first copy's result", applied, err)
		}
		retry <- res
	}()
	close(release)
	want := CommandResult{ID: "slow", Result: json.RawMessage(`"done"`)}
	if got := <-first; !reflect.DeepEqual(got, want) {
		t.Fatalf("first: got %+v, want %+v", got, want)
	}
	if got := <-retry; !reflect.DeepEqual(got, want) {
		t.Fatalf("retry: got %+v, want %+v", got, want)
	}
}

func TestDedupWaitCancelled(t *testing.T) {
	d := NewDedup(4)
	release, started := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _ = d.Do(context.Background(), "slow", func() CommandResult {
			close(started)
			<-release
			return CommandResult{}
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, applied, err := d.Do(ctx, "slow", nil); applied || !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting retry with a cancelled ctx: got applied=%t err=%v, want %v", applied, err, context.Canceled)
	}
	close(release)
	<-done
}

func TestDedupPanic(t *testing.T) {
	d := NewDedup(4)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not go on")
			}
		}()
		_, _, _ = d.Do(context.Background(), "p", func() CommandResult { panic("boom") })
	}()
	if d.Len() != 0 {
		t.Fatalf("Len after a panic: got %d, want 0 (the id is forgotten)", d.Len())
	}
	res, applied, err := d.Do(context.Background(), "p", func() CommandResult { return CommandResult{} })
	if err != nil || !applied || res.Error != nil {
		t.Fatalf("after the panic: got %+v applied=%t err=%v, want a fresh application", res, applied, err)
	}
}
