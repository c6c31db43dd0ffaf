package executor

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
)

// guardTimeout only stops a test that would otherwise hang; no assertion
// depends on timing.
const guardTimeout = 30 * time.Second

const testToken = "s3cret-token"

// fakeHost is a scripted executor host speaking the real protocol on a
// real socket: per-session outboxes (offsets from 1, dropped when acked),
// records streamed on the connection that started or last attached the
// session, replay after an attach's From, Pending requests, and
// hostproto.Dedup in front of every command. Agent commands go to handle.
type fakeHost struct {
	path     string
	token    string
	hostID   string
	versions hostproto.Versions
	// tls, if set, serves TLS on a TCP port of 127.0.0.1 (path is then
	// its address) instead of a unix socket.
	tls    *tls.Config
	dedup  *hostproto.Dedup
	ctx    context.Context // ends at close: unblocks scripted handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// handle answers new, load, resume, prompt, cancel, set_mode,
	// set_config_option and permission_answer (after its bookkeeping); nil
	// answers each with an empty result. It may block and emit records.
	handle func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult
	// stop answers stop; nil emits an exit record {code 0} and answers it.
	stop func(f *fakeHost, cmd hostproto.Command) hostproto.CommandResult
	// started, if set, runs in a start once the session exists, before the
	// answer (it may block and emit records).
	started func(f *fakeHost, cmd hostproto.Command)

	mu       sync.Mutex
	ln       net.Listener
	refuse   bool // close connections before the handshake
	mute     bool // answer no pings
	conns    map[*fakeConn]bool
	nconns   int
	sessions map[string]*fakeSession
	received []fakeReceived
	applied  map[string]int
	acks     []hostproto.Ack
	refusals []error
	changed  chan struct{}
}

type fakeConn struct {
	c *hostproto.Conn
	n int // 1 for the first connection, and so on
}

type fakeReceived struct {
	conn int
	cmd  hostproto.Command
}

type fakeSession struct {
	records []hostproto.Record // not yet acked
	next    uint64
	stream  *fakeConn
	pending []hostproto.PermissionRequest
}

// newFakeHost serves a fake host on a fresh socket until the test ends.
func newFakeHost(t *testing.T, setup func(*fakeHost)) *fakeHost {
	t.Helper()
	dir, err := os.MkdirTemp("", "exh") // short: unix socket paths are bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeHost{path: filepath.Join(dir, "host.sock"), token: testToken, hostID: "fake-host"}
	if setup != nil {
		setup(f)
	}
	if err := f.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

func (f *fakeHost) start() error {
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.dedup = hostproto.NewDedup(1024)
	f.conns, f.sessions, f.applied = map[*fakeConn]bool{}, map[string]*fakeSession{}, map[string]int{}
	f.changed = make(chan struct{})
	return f.listen()
}

// listen (again, after shutdown) on the host's path.
func (f *fakeHost) listen() error {
	network, addr := "unix", f.path
	if f.tls != nil {
		network, addr = "tcp", "127.0.0.1:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	if f.tls != nil {
		f.path = ln.Addr().String()
		ln = tls.NewListener(ln, f.tls)
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go f.serveConn(nc)
		}
	}()
	return nil
}

// shutdown stops listening and drops every connection; the outboxes stay
// (listen brings the host back).
func (f *fakeHost) shutdown() {
	f.mu.Lock()
	ln := f.ln
	f.mu.Unlock()
	_ = ln.Close()
	f.cut()
}

func (f *fakeHost) close() {
	f.cancel()
	f.shutdown()
	f.wg.Wait()
}

// cut closes every live connection, as a network cut the host notices.
func (f *fakeHost) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fc := range f.conns {
		_ = fc.c.Close()
	}
}

func (f *fakeHost) setRefuse(v bool) {
	f.mu.Lock()
	f.refuse = v
	f.mu.Unlock()
}

func (f *fakeHost) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeHost) serveConn(nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	f.mu.Lock()
	refuse := f.refuse
	f.mu.Unlock()
	if refuse {
		return
	}
	ctx, cancel := context.WithTimeout(f.ctx, guardTimeout)
	c, _, err := hostproto.Server(ctx, nc, hostproto.ServerConfig{Token: f.token, HostID: f.hostID, HostVersion: "fake",
		Versions: f.versions, Sessions: f.sessionIDs})
	cancel()
	if err != nil {
		f.mu.Lock()
		f.refusals = append(f.refusals, err)
		f.notifyLocked()
		f.mu.Unlock()
		return
	}
	f.mu.Lock()
	f.nconns++
	fc := &fakeConn{c: c, n: f.nconns}
	f.conns[fc] = true
	f.notifyLocked()
	f.mu.Unlock()
	var commands sync.WaitGroup
	defer func() {
		_ = c.Close()
		commands.Wait()
		f.mu.Lock()
		delete(f.conns, fc)
		for _, s := range f.sessions {
			if s.stream == fc {
				s.stream = nil
			}
		}
		f.notifyLocked()
		f.mu.Unlock()
	}()
	for {
		m, err := c.Recv()
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *hostproto.Command:
			f.mu.Lock()
			f.received = append(f.received, fakeReceived{conn: fc.n, cmd: *m})
			f.notifyLocked()
			f.mu.Unlock()
			commands.Add(1)
			go func() {
				defer commands.Done()
				res, _, err := f.dedup.Do(f.ctx, m.ID, func() hostproto.CommandResult { return f.apply(fc, *m) })
				if err == nil {
					_ = c.Send(&res)
				}
			}()
		case *hostproto.Ack:
			f.ack(*m)
		case *hostproto.Ping:
			f.mu.Lock()
			mute := f.mute
			f.mu.Unlock()
			if !mute {
				_ = c.Send(&hostproto.Pong{Nonce: m.Nonce})
			}
		}
	}
}

func (f *fakeHost) sessionIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

var fakeCaps = hostproto.Capabilities{ProtocolVersion: 1, LoadSession: true, AgentName: "fake-agent"}

const fakePID = 4242

func (f *fakeHost) apply(fc *fakeConn, cmd hostproto.Command) hostproto.CommandResult {
	f.mu.Lock()
	f.applied[cmd.ID]++
	f.notifyLocked()
	f.mu.Unlock()
	switch cmd.Kind {
	case hostproto.CommandStart:
		f.mu.Lock()
		f.sessions[cmd.SessionID] = &fakeSession{stream: fc}
		f.notifyLocked()
		f.mu.Unlock()
		if f.started != nil {
			f.started(f, cmd)
		}
		return okResult(hostproto.StartResult{Capabilities: fakeCaps, PID: fakePID})
	case hostproto.CommandAttach:
		var p hostproto.AttachPayload
		_ = json.Unmarshal(cmd.Payload, &p)
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.sessions[cmd.SessionID]
		if s == nil {
			return errResult(errcode.New(errcode.HostSessionUnknown, "no session %s", cmd.SessionID))
		}
		f.dropLocked(cmd.SessionID, p.From)
		s.stream = fc
		for i := range s.records {
			_ = fc.c.Send(&s.records[i])
		}
		f.notifyLocked()
		return okResult(hostproto.AttachResult{Capabilities: fakeCaps, PID: fakePID, Pending: s.pending, NextOffset: s.next + 1})
	case hostproto.CommandStatus:
		var st hostproto.StatusResult
		for _, id := range f.sessionIDs() {
			st.Sessions = append(st.Sessions, hostproto.SessionStatus{SessionID: id, PID: fakePID})
		}
		return okResult(st)
	case hostproto.CommandStop:
		if f.stop != nil {
			return f.stop(f, cmd)
		}
		f.emit(cmd.SessionID, hostproto.RecordExit, hostproto.Exit{})
		return okResult(hostproto.StopResult{})
	case hostproto.CommandPermissionAnswer:
		var p hostproto.PermissionAnswerPayload
		_ = json.Unmarshal(cmd.Payload, &p)
		f.mu.Lock()
		if s := f.sessions[cmd.SessionID]; s != nil {
			s.pending = withoutRequest(s.pending, p.RequestID)
		}
		f.mu.Unlock()
	}
	if f.handle != nil {
		return f.handle(f, cmd)
	}
	return okResult(nil)
}

// emit appends a record to the session's outbox and streams it if a
// connection takes the session's records.
func (f *fakeHost) emit(sessionID string, kind hostproto.RecordKind, payload any) uint64 {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[sessionID]
	s.next++
	rec := hostproto.Record{Offset: s.next, SessionID: sessionID, Kind: kind, Payload: b}
	s.records = append(s.records, rec)
	switch kind {
	case hostproto.RecordRequest:
		var p hostproto.PermissionRequest
		_ = json.Unmarshal(b, &p)
		s.pending = append(s.pending, p)
	case hostproto.RecordRequestClosed:
		var p hostproto.RequestClosed
		_ = json.Unmarshal(b, &p)
		s.pending = withoutRequest(s.pending, p.RequestID)
	}
	if s.stream != nil {
		_ = s.stream.c.Send(&rec)
	}
	f.notifyLocked()
	return s.next
}

func (f *fakeHost) update(sessionID, text string) uint64 {
	return f.emit(sessionID, hostproto.RecordUpdate, hostproto.Update{AcpSessionID: "acp-1", Kind: "agent_message_chunk", Text: text})
}

// chunk emits an update whose text names its offset ("chunk 7").
func (f *fakeHost) chunk(sessionID string) uint64 {
	f.mu.Lock()
	next := f.sessions[sessionID].next + 1
	f.mu.Unlock()
	return f.update(sessionID, fmt.Sprintf("chunk %d", next))
}

func withoutRequest(rs []hostproto.PermissionRequest, id string) []hostproto.PermissionRequest {
	var out []hostproto.PermissionRequest
	for _, r := range rs {
		if r.RequestID != id {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeHost) ack(a hostproto.Ack) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acks = append(f.acks, a)
	f.dropLocked(a.SessionID, a.Offset)
	f.notifyLocked()
}

// dropLocked drops what the daemon committed; a session whose exit is
// committed is gone.
func (f *fakeHost) dropLocked(sessionID string, upTo uint64) {
	s := f.sessions[sessionID]
	if s == nil {
		return
	}
	n := 0
	for n < len(s.records) && s.records[n].Offset <= upTo {
		if s.records[n].Kind == hostproto.RecordExit {
			delete(f.sessions, sessionID)
		}
		n++
	}
	s.records = s.records[n:]
}

// waitFor waits until cond (called under the host's lock) holds.
func (f *fakeHost) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() <-chan struct{} {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.changed
	}, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return cond()
	})
}

// receivedLocked lists the commands of kind received, in order.
func (f *fakeHost) receivedLocked(kind hostproto.CommandKind) []fakeReceived {
	var out []fakeReceived
	for _, r := range f.received {
		if r.cmd.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeHost) lastAckLocked(sessionID string) uint64 {
	var off uint64
	for _, a := range f.acks {
		if a.SessionID == sessionID {
			off = max(off, a.Offset)
		}
	}
	return off
}

// wait blocks a scripted handler until ch closes or the host closes.
func (f *fakeHost) wait(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-f.ctx.Done():
		return false
	}
}

func okResult(v any) hostproto.CommandResult {
	if v == nil {
		return hostproto.CommandResult{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return hostproto.CommandResult{Result: b}
}

func errResult(err error) hostproto.CommandResult {
	return hostproto.CommandResult{Error: hostproto.ErrorFrom(err)}
}

// eventually waits, without any timed assertion, until cond holds,
// re-checking it whenever changed's channel closes.
func eventually(t *testing.T, what string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	guard := time.NewTimer(guardTimeout)
	defer guard.Stop()
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-guard.C:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
