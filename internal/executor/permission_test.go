package executor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/hostproto"
)

func permissionRequest(id string) hostproto.PermissionRequest {
	title := "rm -rf build"
	return hostproto.PermissionRequest{RequestID: id, AcpSessionID: "acp-1", Tool: hostproto.ToolCall{ID: "tool-" + id, Title: &title},
		Options: []acp.PermissionOption{{ID: "allow", Name: "Allow", Kind: "allow_once"}, {ID: "deny", Name: "Deny", Kind: "reject_once"}}}
}

func (r *recHandler) waitRequests(t *testing.T, n int) []*reqCall {
	t.Helper()
	r.waitFor(t, "permission requests", func() bool { return len(r.reqs) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*reqCall(nil), r.reqs...)
}

func answers(f *fakeHost) []fakeReceived { return f.receivedLocked(hostproto.CommandPermissionAnswer) }

// TestPendingPermissionAcrossRestart: a request pending while the daemon
// restarts reaches the new daemon's handler once, although it comes both
// replayed and in the attach's Pending; the answer carries an id derived
// from the request, so that resending it after a cut is applied once.
func TestPendingPermissionAcrossRestart(t *testing.T) {
	cutOnce := make(chan struct{}, 1)
	cutOnce <- struct{}{}
	f := newFakeHost(t, func(f *fakeHost) {
		f.handle = func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult {
			if cmd.Kind == hostproto.CommandPermissionAnswer {
				select {
				case <-cutOnce: // the answer is applied, its result lost
					f.cut()
				default:
				}
			}
			return okResult(nil)
		}
	})
	// No ack reaches the host: the request record is replayed after the
	// restart, and also pending.
	noAcks := func(c *HostConfig) { c.AckEvery, c.AckDelay = 1000, time.Hour }
	h1 := newTestHost(t, f, noAcks)
	rh1 := newRecHandler(true)
	startAgent(t, h1, "s1", rh1)
	off := f.emit("s1", hostproto.RecordRequest, permissionRequest("r1"))
	first := rh1.waitRequests(t, 1)[0]
	if first.req.ID != "r1" || first.req.Offset != off || first.req.Tool.ID != "tool-r1" || len(first.req.Options) != 2 {
		t.Fatalf("request: got %+v, want r1 at offset %d", first.req, off)
	}
	h1.Close()
	await(t, "the first handler's call to end", first.returned)
	if cause := context.Cause(first.ctx); !errors.Is(cause, acp.ErrAgentGone) {
		t.Fatalf("request context after Close: cause %v, want %v", cause, acp.ErrAgentGone)
	}

	h2 := newTestHost(t, f, nil)
	rh2 := newRecHandler(true)
	a2, err := h2.Attach(ctxT(t), "s1", 0, rh2)
	if err != nil {
		t.Fatal(err)
	}
	again := rh2.waitRequests(t, 1)[0]
	again.reply <- acp.PermissionOutcome{OptionID: "allow"}
	f.waitFor(t, "the answer resent after the cut", func() bool { return len(answers(f)) == 2 })
	h2.Close()
	a2.reqWG.Wait()
	rh2.mu.Lock()
	if len(rh2.reqs) != 1 || rh2.reqs[0].req.ID != "r1" {
		t.Errorf("the restarted daemon's handler got %d requests, want r1 once", len(rh2.reqs))
	}
	rh2.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	as := answers(f)
	var p hostproto.PermissionAnswerPayload
	_ = json.Unmarshal(as[0].cmd.Payload, &p)
	if as[0].cmd.ID != answerID("s1", "r1") || as[1].cmd.ID != as[0].cmd.ID || f.applied[as[0].cmd.ID] != 1 ||
		p != (hostproto.PermissionAnswerPayload{RequestID: "r1", OptionID: "allow"}) {
		t.Fatalf("answers: got %+v (payload %+v, applied %d), want %s twice, applied once", as, p, f.applied[as[0].cmd.ID], answerID("s1", "r1"))
	}
}

// TestRequestClosedCancelsTheCall: the agent withdraws a request; the
// handler's ctx ends with a plain cancel and no answer is sent.
func TestRequestClosedCancelsTheCall(t *testing.T) {
	f := newFakeHost(t, nil)
	h := newTestHost(t, f, nil)
	rh := newRecHandler(true)
	a := startAgent(t, h, "s1", rh)
	f.emit("s1", hostproto.RecordRequest, permissionRequest("r1"))
	rc := rh.waitRequests(t, 1)[0]
	f.emit("s1", hostproto.RecordRequestClosed, hostproto.RequestClosed{RequestID: "r1"})
	await(t, "the handler's call to end", rc.returned)
	if cause := context.Cause(rc.ctx); !errors.Is(cause, context.Canceled) || errors.Is(cause, acp.ErrAgentGone) {
		t.Fatalf("cause: got %v, want a plain cancel", cause)
	}
	a.reqWG.Wait()
	h.mu.Lock()
	_, queued := h.calls[answerID("s1", "r1")]
	h.mu.Unlock()
	f.mu.Lock()
	sent := len(answers(f))
	f.mu.Unlock()
	if queued || sent != 0 {
		t.Fatalf("a withdrawn request was answered (queued %t, sent %d)", queued, sent)
	}

	// The next request is answered as usual.
	f.emit("s1", hostproto.RecordRequest, permissionRequest("r2"))
	rh.waitRequests(t, 2)[1].reply <- acp.PermissionOutcome{Cancelled: true}
	f.waitFor(t, "the answer to r2", func() bool { return len(answers(f)) == 1 })
}
