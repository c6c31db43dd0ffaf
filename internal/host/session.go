package host

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether/tether/internal/acp"
	"github.com/tether/tether/internal/atomicfile"
	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/hostproto"
	"github.com/tether/tether/internal/outbox"
)

const metaFile = "meta.json"

// meta is what a session directory says about its session besides the
// outbox: enough for status after a host restart, and the generation
// that fences older owners.
type meta struct {
	SessionID    string `json:"sessionId"`
	ProfileID    string `json:"profileId"`
	Cwd          string `json:"cwd"`
	AcpSessionID string `json:"acpSessionId,omitempty"`
	PID          int    `json:"pid,omitempty"`
	// Sandbox is whether the agent runs in its sandbox, and why not.
	Sandbox   hostproto.Sandbox `json:"sandbox"`
	StartedAt time.Time         `json:"startedAt"`
	// Generation is the newest fencing token a command for the session
	// carried (route.go); kept so that a restarted host still refuses
	// the older ones.
	Generation uint64 `json:"generation,omitempty"`
}

// session is one daemon session the host holds: its outbox, append
// queue and acker, and its agent while it runs. A start replaces the whole value,
// so every goroutine of an incarnation works on its own.
type session struct {
	h   *Host
	id  string
	dir string
	ob  *outbox.Outbox
	log *slog.Logger
	q   queue

	quit chan struct{} // closed by close once the agent is gone: the acker stops
	// closingCh closes as close begins: an append the full outbox refuses
	// is given up instead of retried, so that nothing waits on it.
	closingCh chan struct{}
	ackSig    chan struct{} // cap 1: an ack to make durable
	room      chan struct{} // cap 1: an ack freed room in the outbox
	starved   chan struct{} // cap 1: the outbox refused a record as full
	wg        sync.WaitGroup
	closing   sync.Once
	// blocked counts appends the outbox refused as full (tests).
	blocked atomic.Uint64
	// exitQueued closes once the agent's exit record is queued.
	exitQueued chan struct{}
	// appendMu makes flushes take turns; appendBuf, runBuf and dataBuf
	// are the flush's.
	appendMu  sync.Mutex
	appendBuf []item
	runBuf    []item
	dataBuf   [][]byte

	// metaMu orders writes of the meta file (commands update it
	// concurrently).
	metaMu  sync.Mutex
	mu      sync.Mutex
	meta    meta
	agent   *acp.Conn
	stopped bool // close began: an agent that starts now is stopped at once
	running int  // prompts in flight
	pending map[string]*pendingRequest
	// stopAsked: the daemon asked for the agent's end (stop); it may
	// take its grace to come. An attach meanwhile waits for it.
	stopAsked bool
	exited    bool
	exit      hostproto.Exit
	exitOff   uint64 // offset of the exit record once appended
	// damaged is why the session's records end early (an
	// errcode.HostOutboxDamaged error): its outbox was found damaged, and
	// its exit record says so. Nil for a whole session.
	damaged error
	// settingAside: a read found the outbox damaged, and the damage is
	// being (or was) set aside (damage.go).
	settingAside bool
	// lostFrom is the first offset the damage took, 0 if none.
	lostFrom uint64
	ackWant  uint64
	// route is the link the session's records flow on, nil if none
	// (route.go); changed under mu, read without a lock on the record
	// path.
	route atomic.Pointer[link]
}

// pendingRequest is a permission request the daemon has not answered.
type pendingRequest struct {
	wire hostproto.PermissionRequest
	// offset is the request record's, 0 until it is durable: only then
	// does an AttachResult list it.
	offset uint64
	answer chan acp.PermissionOutcome // cap 1
}

// openSession opens (creating) the session directory and its outbox and
// starts the acker; the caller registers it.
func (h *Host) openSession(id string, m meta) (*session, error) {
	dir := filepath.Join(h.sessionsDir(), id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ocfg := h.cfg.Outbox
	ocfg.Logger = h.log.With("session", id)
	// Outside the session's directory, which goes once the session ends:
	// the damaged files are kept for a person to look at.
	ocfg.QuarantineDir = filepath.Join(h.quarantineDir(), id)
	ob, err := outbox.Open(dir, ocfg)
	if err != nil {
		return nil, err
	}
	s := &session{h: h, id: id, dir: dir, ob: ob, log: h.log.With("session", id), meta: m,
		quit: make(chan struct{}), closingCh: make(chan struct{}), ackSig: make(chan struct{}, 1), room: make(chan struct{}, 1),
		starved: make(chan struct{}, 1), exitQueued: make(chan struct{}), pending: map[string]*pendingRequest{}}
	s.q.last.Store(ob.Stats().Next - 1)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.runAcker() }()
	return s, nil
}

// close stops the agent (its exit record is queued first), lets the
// queue drain (one attempt a record), and closes the outbox. Safe to call
// more than once.
func (s *session) close() {
	s.closing.Do(func() {
		close(s.closingCh)
		s.mu.Lock()
		s.stopped = true
		a := s.agent
		s.mu.Unlock()
		if a != nil {
			a.Stop()
			<-s.exitQueued
		}
		close(s.quit)
		s.flush() // one attempt each for what is still queued
		s.q.mu.Lock()
		s.q.closed = true
		s.q.mu.Unlock()
		s.flush() // what came between the two
		s.wg.Wait()
		if err := s.ob.Close(); err != nil {
			s.log.Warn("host: close outbox", "err", err)
		}
	})
}

// writeMeta replaces the meta file atomically with the session's meta.
func (s *session) writeMeta() error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	return s.saveMeta(m)
}

// saveMeta replaces the meta file atomically with m; the caller holds
// metaMu.
func (s *session) saveMeta(m meta) error {
	b, err := json.Marshal(m)
	if err == nil {
		err = atomicfile.Write(filepath.Join(s.dir, metaFile), b)
	}
	return err
}

// updateMeta changes the meta and writes it. What it keeps only helps
// status after a host restart, so a failed write is logged, not fatal.
func (s *session) updateMeta(f func(*meta)) {
	s.mu.Lock()
	f(&s.meta)
	s.mu.Unlock()
	if err := s.writeMeta(); err != nil {
		s.log.Warn("host: write session meta", "err", err)
	}
}

func readMeta(dir string) (meta, error) {
	var m meta
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, metaFile), err)
	}
	return m, nil
}

// liveAgent is the session's agent, or an error if it has none running.
func (s *session) liveAgent() (*acp.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agent == nil || s.exited {
		return nil, errcode.New(errcode.InvalidState, "the agent of session %s is not running", s.id)
	}
	return s.agent, nil
}

// pendingList is the durable pending requests, oldest first.
func (s *session) pendingList() []hostproto.PermissionRequest {
	s.mu.Lock()
	ps := make([]*pendingRequest, 0, len(s.pending))
	for _, p := range s.pending {
		if p.offset > 0 {
			ps = append(ps, p)
		}
	}
	s.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].offset < ps[j].offset })
	out := make([]hostproto.PermissionRequest, len(ps))
	for i, p := range ps {
		out[i] = p.wire
	}
	return out
}

// busy reports whether the session keeps a lingering host alive: a prompt
// in flight or a request waiting for the daemon.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running > 0 || len(s.pending) > 0
}

func (s *session) status() hostproto.SessionStatus {
	st := s.ob.Stats()
	s.mu.Lock()
	defer s.mu.Unlock()
	return hostproto.SessionStatus{SessionID: s.id, ProfileID: s.meta.ProfileID, PID: s.meta.PID,
		Running: s.running > 0, Exited: s.exited, OutboxRecords: st.PendingRecords, OutboxBytes: st.PendingBytes}
}

// recoverSession takes up a session directory a previous run of the host
// left: its agent is gone with that run, so unless the outbox already
// ends with an exit record, a lost exit is appended after the rest. An
// outbox found damaged keeps its intact records (outbox.Damage) and the
// lost exit says what happened, with errcode.HostOutboxDamaged.
func (h *Host) recoverSession(id string) (*session, error) {
	dir := filepath.Join(h.sessionsDir(), id)
	m, err := readMeta(dir)
	if err != nil {
		h.log.Warn("host: session without a readable meta file", "session", id, "err", err)
		m = meta{SessionID: id}
	}
	m.PID = 0 // the agent went with the previous run
	s, err := h.openSession(id, m)
	if err != nil {
		return nil, err
	}
	var damage error
	var lostFrom uint64
	if d := s.ob.Damage(); d != nil {
		damage, lostFrom = damageCause(d), d.FirstLost
		s.log.Error("host: the session's outbox was damaged; its intact records are delivered, its agent reported lost", "damage", d.String())
	}
	st := s.ob.Stats()
	if st.Next-1 > st.Acked {
		recs, err := s.ob.Read(st.Next-1, 1)
		if err != nil {
			s.close()
			return nil, err
		}
		kind, payload, err := decodeRecord(recs[0].Data)
		if err != nil {
			s.close()
			return nil, err
		}
		if kind == hostproto.RecordExit {
			var e hostproto.Exit
			if err := json.Unmarshal(payload, &e); err != nil {
				s.close()
				return nil, fmt.Errorf("host: exit record of session %s: %w", id, err)
			}
			s.exited, s.exit, s.exitOff, s.damaged = true, e, recs[0].Offset, e.Cause()
			s.q.mu.Lock()
			s.q.sealed = true
			s.q.mu.Unlock()
			return s, nil
		}
	}
	s.mu.Lock()
	s.damaged, s.lostFrom = damage, lostFrom
	s.exited, s.exit = true, s.withDamageLocked(hostproto.Exit{Code: -1, Lost: true})
	e := s.exit
	s.mu.Unlock()
	s.record(item{kind: hostproto.RecordExit, payload: e, appended: s.setExitOffset})
	s.log.Info("host: session found without its agent (the host was not stopped cleanly); its exit is reported lost")
	return s, nil
}

// setExitOffset is the exit record's appended callback.
func (s *session) setExitOffset(off uint64) {
	s.mu.Lock()
	s.exitOff = off
	s.mu.Unlock()
}

// validSessionID keeps a daemon's session id a plain directory name.
func validSessionID(id string) error {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return errcode.New(errcode.InvalidRequest, "invalid session id %q", id)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return errcode.New(errcode.InvalidRequest, "invalid session id %q: only letters, digits, '-', '_' and '.'", id)
		}
	}
	return nil
}

var errShuttingDown = errcode.New(errcode.ServiceShuttingDown, "the host is shutting down")
