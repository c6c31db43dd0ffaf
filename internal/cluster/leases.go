package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tether/tether/internal/errcode"
	"github.com/tether/tether/internal/store"
)

// Store is what the cluster needs of the database (store.Store on
// PostgreSQL implements it).
type Store interface {
	// AcquireLease takes the session's lease for nodeID when it is free,
	// expired or already nodeID's, raising its generation, and returns
	// the lease as it stands afterwards (another node's when it was not
	// taken).
	AcquireLease(ctx context.Context, sessionID, nodeID string, ttl time.Duration) (store.Lease, error)
	// RenewLeases extends the leases nodeID holds at the given
	// generations and the node's heartbeat; it returns the sessions
	// renewed (a missing one was taken or has expired).
	RenewLeases(ctx context.Context, nodeID string, held map[string]int64, ttl time.Duration) ([]string, error)
	// ReleaseLease ends nodeID's lease of the session at gen, so that any
	// node may take it at once.
	ReleaseLease(ctx context.Context, sessionID, nodeID string, gen int64) error
	// SessionLease is the session's lease, with its owner's URL and
	// whether it is live; ok false when the session never had one.
	SessionLease(ctx context.Context, sessionID string) (store.Lease, bool, error)
	// OrphanedSessions lists sessions with work in flight (a turn running
	// or queued, an agent live on a host) whose lease expired or was
	// never taken.
	OrphanedSessions(ctx context.Context) ([]string, error)
	// LiveNodes counts the nodes whose heartbeat is younger than ttl.
	LiveNodes(ctx context.Context, ttl time.Duration) (int, error)
	// LiveLeases counts the leases that have not expired.
	LiveLeases(ctx context.Context) (int, error)
}

// Leases are the session leases this node holds, renewed in the
// background. It is the fencing token's source: the generation a write
// or a host command of a session carries.
type Leases struct {
	cfg Config
	st  Store
	log *slog.Logger

	mu   sync.Mutex
	held map[string]int64
	// handedOver are the sessions this node gave to others, and when
	// (HandOver): its scan does not take them straight back.
	handedOver map[string]time.Time
	// renewedAt is when the last renewal succeeded (monotonic); past TTL
	// without one the node counts its leases as lost.
	renewedAt time.Time
	// takenAt is when a lease taken since that renewal was asked for: it
	// is good for a TTL from then, whatever the renewals (a node back
	// from a database outage takes its sessions again before its next
	// renewal; their agents' commands must carry the new generation).
	takenAt map[string]time.Time
	// onLost, set before Run, hears the sessions whose leases this node
	// lost (taken by another node, or expired unrenewed).
	onLost func([]string)

	// taking makes concurrent Acquires of one session one database call:
	// each call raises the generation, and only the last one's would be
	// the lease's.
	taking singleflight.Group

	acquired, lost, renewFailures atomic.Int64
}

// NewLeases returns the lease table of the node cfg describes.
func NewLeases(cfg Config, st Store, log *slog.Logger) *Leases {
	if log == nil {
		log = slog.Default()
	}
	return &Leases{cfg: cfg, st: st, log: log.With("node", cfg.NodeID), held: map[string]int64{}, takenAt: map[string]time.Time{}, renewedAt: time.Now()}
}

// OnLost sets what hears the sessions whose leases were lost; call it
// before Run.
func (l *Leases) OnLost(f func(sessionIDs []string)) { l.onLost = f }

// NodeID is this node's id.
func (l *Leases) NodeID() string { return l.cfg.NodeID }

// Acquire takes the session's lease for this node unless another live
// node holds it (errcode.SessionOwnedElsewhere, with the owner's node id
// and URL). A lease this node holds already is kept as it is.
func (l *Leases) Acquire(ctx context.Context, sessionID string) (int64, error) {
	v, err, _ := l.taking.Do(sessionID, func() (any, error) {
		if gen, ok := l.Generation(sessionID); ok {
			return gen, nil
		}
		// The database counts the TTL from no earlier than this.
		start := time.Now()
		lease, err := l.st.AcquireLease(context.WithoutCancel(ctx), sessionID, l.cfg.NodeID, l.cfg.TTL)
		if err != nil {
			return int64(0), err
		}
		if lease.NodeID != l.cfg.NodeID {
			return int64(0), ownedElsewhere(sessionID, lease)
		}
		l.mu.Lock()
		l.held[sessionID] = lease.Generation
		l.takenAt[sessionID] = start
		l.mu.Unlock()
		l.acquired.Add(1)
		return lease.Generation, nil
	})
	return v.(int64), err
}

func ownedElsewhere(sessionID string, lease store.Lease) error {
	return errcode.New(errcode.SessionOwnedElsewhere, "session %s is owned by node %s", sessionID, lease.NodeID).
		With("owner", lease.NodeID).With("ownerUrl", lease.NodeURL)
}

// Generation is the generation of the session's lease while this node
// holds it and has renewed it within the TTL; false otherwise (then
// nothing should be written or sent to an agent for the session: the
// writes would be refused anyway).
func (l *Leases) Generation(sessionID string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gen, ok := l.held[sessionID]
	if !ok || l.expiredLocked(sessionID, time.Now()) {
		return 0, false
	}
	return gen, true
}

// expiredLocked reports whether the session's lease counts as lost at
// now: neither renewed nor taken within the TTL. l.mu is held.
func (l *Leases) expiredLocked(sessionID string, now time.Time) bool {
	if !selfExpired(l.renewedAt, now, l.cfg.TTL) {
		return false
	}
	at, ok := l.takenAt[sessionID]
	return !ok || selfExpired(at, now, l.cfg.TTL)
}

// Held lists the sessions this node holds, sorted.
func (l *Leases) Held() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.held))
	for id := range l.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Release gives the session's lease up (its session ended, or its actor
// was unloaded), so another node may take it without waiting for expiry.
func (l *Leases) Release(ctx context.Context, sessionID string) {
	l.mu.Lock()
	gen, ok := l.held[sessionID]
	delete(l.held, sessionID)
	l.mu.Unlock()
	if !ok {
		return
	}
	if err := l.st.ReleaseLease(ctx, sessionID, l.cfg.NodeID, gen); err != nil {
		l.log.Warn("cluster: releasing a lease failed; it expires by itself", "session", sessionID, "err", err)
	}
}

// HandOver gives the session's lease up for another node to take: its
// actor has been unloaded (its agent left running on its host). This
// node's takeover scan leaves it alone for a while, so that it goes
// elsewhere.
func (l *Leases) HandOver(ctx context.Context, sessionID string) {
	l.mu.Lock()
	if l.handedOver == nil {
		l.handedOver = map[string]time.Time{}
	}
	l.handedOver[sessionID] = time.Now()
	l.mu.Unlock()
	l.Release(ctx, sessionID)
}

// handedOverRecently reports whether this node handed the session over
// within the last two TTLs (HandOver).
func (l *Leases) handedOverRecently(sessionID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.handedOver[sessionID]
	if ok && time.Since(at) > 2*l.cfg.TTL {
		delete(l.handedOver, sessionID)
		return false
	}
	return ok
}

// Forget drops the session from the table without touching the database
// (the lease is gone already: a write was fenced).
func (l *Leases) Forget(sessionID string) {
	l.mu.Lock()
	_, ok := l.held[sessionID]
	delete(l.held, sessionID)
	l.mu.Unlock()
	if ok {
		l.lost.Add(1)
		l.notifyLost([]string{sessionID})
	}
}

// Stats are the counters /metrics shows.
type Stats struct {
	Held, Acquired, Lost, RenewFailures int64
}

// Stats reports the table's counters.
func (l *Leases) Stats() Stats {
	l.mu.Lock()
	n := len(l.held)
	l.mu.Unlock()
	return Stats{Held: int64(n), Acquired: l.acquired.Load(), Lost: l.lost.Load(), RenewFailures: l.renewFailures.Load()}
}

// Run renews the node's heartbeat and leases every RenewEvery until ctx
// ends. The node registered before (its start-up, which takes the node's
// row away again should it fail): a renewal only updates the row, so a
// node that gave up starting is not registered again behind its back.
func (l *Leases) Run(ctx context.Context) error {
	l.mu.Lock()
	l.renewedAt = time.Now()
	l.mu.Unlock()
	t := time.NewTicker(l.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			l.renew(ctx)
		}
	}
}

// renew extends every held lease in one statement and hands the ones
// that were not renewed (taken by another node, or expired while this
// node could not reach the database) to onLost.
func (l *Leases) renew(ctx context.Context) {
	l.mu.Lock()
	held := make(map[string]int64, len(l.held))
	for id, gen := range l.held {
		held[id] = gen
	}
	l.mu.Unlock()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, l.cfg.TTL/2)
	renewed, err := l.st.RenewLeases(rctx, l.cfg.NodeID, held, l.cfg.TTL)
	cancel()
	l.mu.Lock()
	var lost []string
	if err != nil {
		l.renewFailures.Add(1)
		now := time.Now()
		for id := range l.held {
			if l.expiredLocked(id, now) {
				lost = append(lost, id)
				delete(l.held, id)
				delete(l.takenAt, id)
			}
		}
		slices.Sort(lost)
	} else {
		// Renewed from the moment the statement was sent: the database
		// counted the TTL from no earlier.
		l.renewedAt = start
		for id, at := range l.takenAt {
			if !at.After(start) {
				delete(l.takenAt, id)
			}
		}
		lost = notRenewed(held, renewed)
		for _, id := range lost {
			if l.held[id] == held[id] { // not re-acquired meanwhile
				delete(l.held, id)
			}
		}
	}
	l.mu.Unlock()
	if err != nil {
		l.log.Warn("cluster: renewing leases failed", "held", len(held), "err", err)
	}
	if len(lost) > 0 {
		l.lost.Add(int64(len(lost)))
		l.log.Warn("cluster: leases lost", "sessions", lost)
		l.notifyLost(lost)
	}
}

func (l *Leases) notifyLost(ids []string) {
	if l.onLost != nil {
		l.onLost(ids)
	}
}

// selfExpired reports whether leases last renewed at renewedAt count as
// lost at now: once TTL has passed the database may have given them to
// another node.
func selfExpired(renewedAt, now time.Time, ttl time.Duration) bool {
	return now.Sub(renewedAt) >= ttl
}

// notRenewed lists, sorted, the held sessions a renewal did not extend.
func notRenewed(held map[string]int64, renewed []string) []string {
	ok := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	var lost []string
	for id := range held {
		if !ok[id] {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	return lost
}

// Healthy is nil while this node's last lease renewal (and heartbeat) is
// younger than the TTL: it reaches the database and its leases hold.
func (l *Leases) Healthy() error {
	l.mu.Lock()
	at := l.renewedAt
	l.mu.Unlock()
	if selfExpired(at, time.Now(), l.cfg.TTL) {
		return fmt.Errorf("no lease renewal for %s (the database cannot be reached)", time.Since(at).Round(time.Millisecond))
	}
	return nil
}

// Owner is the URL of the live node other than this one that owns the
// session, "" when this node serves it (it holds the lease, or nobody
// holds it live): server.Router.
func (l *Leases) Owner(ctx context.Context, sessionID string) (string, error) {
	if _, ok := l.Generation(sessionID); ok {
		return "", nil
	}
	lease, found, err := l.st.SessionLease(ctx, sessionID)
	if err != nil || !found || !lease.Live || lease.NodeID == l.cfg.NodeID {
		return "", err
	}
	return lease.NodeURL, nil
}

// Owns reports whether this node holds the session's lease now.
func (l *Leases) Owns(sessionID string) bool {
	_, ok := l.Generation(sessionID)
	return ok
}

// ReleaseAll gives up every lease this node holds, at a clean shutdown
// (after its actors stopped): another node takes the sessions with work
// in flight at its next scan instead of after the TTL.
func (l *Leases) ReleaseAll(ctx context.Context) {
	for _, id := range l.Held() {
		l.Release(ctx, id)
	}
}
