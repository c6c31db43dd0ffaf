package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tether/tether/internal/errcode"
)

// Defaults and bounds of Config.
const (
	DefaultSegmentBytes = 16 << 20
	DefaultMaxBytes     = 1 << 30
	// MinSegmentBytes keeps room for a header and a few records; tests use
	// small segments to make them roll.
	MinSegmentBytes = 256
	// MaxSegmentBytes keeps frame positions in 32 bits.
	MaxSegmentBytes = 1 << 30
)

const (
	ackedFile = "acked"
	lockFile  = "LOCK"
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errcode.New(errcode.ServiceShuttingDown, "outbox is closed")

// Config tunes an outbox; the zero value takes the defaults.
type Config struct {
	// SegmentBytes is the size at which the outbox starts a new segment
	// file (DefaultSegmentBytes). Acked records are freed a segment at a
	// time, so this is also the granularity of the disk space returned.
	SegmentBytes int64
	// MaxBytes bounds the bytes (frames included) of records not yet
	// acknowledged (DefaultMaxBytes); past it Append fails with
	// errcode.OutboxFull so that the caller applies back-pressure.
	MaxBytes int64
	// SyncDelay, when positive, lets an Append return once its records
	// are written, before they are fsynced: they then survive the
	// process's crash (they are in the kernel's page cache) but not the
	// machine's, and a goroutine of the outbox fsyncs them within
	// SyncDelay. Zero fsyncs
	// every commit before its Appends return. An Ack always makes the
	// records it covers durable first, so the acked file never names a
	// record the disk may lose.
	SyncDelay time.Duration
	// Logger receives the repairs Open makes and write failures.
	Logger *slog.Logger
	// QuarantineDir is where Open moves what it finds damaged (see
	// Damage), in a new subdirectory named by the time (default
	// <dir>/quarantine). Nothing damaged is ever deleted.
	QuarantineDir string
}

func (c Config) withDefaults() (Config, error) {
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SegmentBytes < MinSegmentBytes || c.SegmentBytes > MaxSegmentBytes {
		return c, fmt.Errorf("outbox: segment size %d is outside [%d, %d]", c.SegmentBytes, MinSegmentBytes, MaxSegmentBytes)
	}
	if c.MaxBytes < 0 {
		return c, fmt.Errorf("outbox: max bytes %d is negative", c.MaxBytes)
	}
	if c.SyncDelay < 0 {
		return c, fmt.Errorf("outbox: sync delay %s is negative", c.SyncDelay)
	}
	return c, nil
}

// maxRecord is the largest record a segment holds next to its header.
func (c Config) maxRecord() int { return int(c.SegmentBytes) - segHeaderSize - frameHeaderSize }

// Outbox is a durable, append-only queue of records numbered by offset.
// All methods are safe for concurrent use.
type Outbox struct {
	dir  string
	cfg  Config
	log  *slog.Logger
	lock *os.File

	// qmu guards the Appends queued for the next commit and the leader
	// flag: the Append that finds no leader commits (lead). stopped, set
	// by Close, refuses new Appends; leaders counts the running leader.
	qmu     sync.Mutex
	queued  []*appendGroup
	leading bool
	stopped bool
	leaders sync.WaitGroup
	// dirty (cap 1) tells the syncer that a commit left records unsynced;
	// quit stops it, wg waits for it.
	dirty chan struct{}
	quit  chan struct{}
	wg    sync.WaitGroup

	// ackMu serializes Acks, whose file write happens outside mu.
	ackMu sync.Mutex

	// mu guards the fields below. The leader publishes under it after each
	// sync; readers hold it (shared) while they read the files, so a
	// segment is never closed under a Read.
	mu      sync.RWMutex
	segs    []*segment // ascending; the last one is the active one
	next    uint64     // offset the next committed record gets
	acked   uint64
	pending int64         // bytes of frames with offset > acked
	changed chan struct{} // closed and replaced at each commit
	closed  bool
	// tail holds copies of the last records committed (contiguous, up to
	// next-1, at most tailBytes of data), so that a sender that keeps up
	// reads them from memory: no read of the file, no checksum.
	tail     []Record // from tailHead on
	tailHead int
	tailSize int

	// syncs counts fsyncs of committed records; leaders, the syncer and
	// Ack add, Stats reads.
	syncs atomic.Uint64
	// durable is the last offset known fsynced (see Config.SyncDelay).
	durable atomic.Uint64
	// damage is what Open found damaged and set aside (nil: nothing).
	damage *Damage
	// skipFrom..skipTo are damaged records Read passes over (Skip); 0
	// when none. Under mu.
	skipFrom, skipTo uint64

	// Owned by the leader of the moment (active is also read under mu).
	active *segment
	broken error // set when a failed write could not be undone
	// rollFailed: a new segment's creation failed, perhaps after its file
	// appeared; the active one takes no more records until one is made,
	// or the two would overlap.
	rollFailed bool
	buf        []byte
	sync       func(*os.File) error // (*os.File).Sync; tests inject failures
}

// Open opens the outbox in dir, creating it if needed. It removes segments
// wholly acknowledged, indexes the others and cuts a torn tail off the
// last one (logged). Damage beyond a torn tail does not fail it: the
// intact records before the damage are kept, the rest is moved to
// Config.QuarantineDir, and Damage says what happened (salvage.go). Only
// one Outbox may have a directory open (a lock file enforces it).
func Open(dir string, cfg Config) (*Outbox, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	o := &Outbox{
		dir: dir, cfg: cfg, log: cfg.Logger, lock: lock,
		dirty: make(chan struct{}, 1), quit: make(chan struct{}),
		changed: make(chan struct{}), sync: (*os.File).Sync,
	}
	if err := o.load(); err != nil {
		o.closeFiles()
		return nil, err
	}
	o.active = o.segs[len(o.segs)-1]
	if cfg.SyncDelay > 0 {
		o.wg.Add(1)
		go o.syncer()
	}
	return o, nil
}

// lockDir takes an exclusive lock on dir's lock file, so that two hosts
// sharing a data dir fail instead of interleaving their writes.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("outbox: %s is in use by another process: %w", dir, err)
	}
	return f, nil
}

// bytesIn is the frame bytes of the committed records in [from, to].
// Caller holds mu (either way).
func (o *Outbox) bytesIn(from, to uint64) int64 {
	var n int64
	for _, s := range o.segs {
		if s.count() == 0 || s.last() < from || s.first > to {
			continue
		}
		i := int(max(from, s.first) - s.first)
		j := int(min(to, s.last()) - s.first)
		n += s.frameEnd(j) - int64(s.pos[i])
	}
	return n
}

// Stats describes an outbox for listings (`tetherd host ls`).
type Stats struct {
	// Acked is the highest acknowledged offset; FirstUnacked is Acked+1.
	Acked, FirstUnacked uint64
	// Next is the offset the next appended record gets.
	Next uint64
	// PendingRecords and PendingBytes are what is not acknowledged yet.
	PendingRecords uint64
	PendingBytes   int64
	// DiskBytes is the size of the segment files; Segments their number.
	DiskBytes int64
	Segments  int
	// Syncs counts the fsyncs of committed records since Open.
	Syncs uint64
	// Durable is the last offset known fsynced; with Config.SyncDelay it
	// trails Next-1 by up to the delay.
	Durable uint64
}

// Stats returns the outbox's current figures.
func (o *Outbox) Stats() Stats {
	o.mu.RLock()
	defer o.mu.RUnlock()
	st := Stats{Acked: o.acked, FirstUnacked: o.acked + 1, Next: o.next, PendingRecords: o.next - 1 - o.acked, PendingBytes: o.pending, Segments: len(o.segs), Syncs: o.syncs.Load(), Durable: o.durable.Load()}
	for _, s := range o.segs {
		st.DiskBytes += s.size
	}
	return st
}

// Close refuses new Appends, lets the commit under way finish (with the
// Appends queued for it), syncs, wakes waiters and closes the files.
func (o *Outbox) Close() error {
	o.ackMu.Lock() // an Ack in progress finishes its removals first
	defer o.ackMu.Unlock()
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	close(o.changed)
	o.mu.Unlock()
	o.qmu.Lock()
	o.stopped = true
	o.qmu.Unlock()
	o.leaders.Wait()
	close(o.quit)
	o.wg.Wait()
	o.syncActive() // without a SyncDelay everything is durable already
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closeFiles()
}

// closeFiles closes every segment and releases the directory lock.
func (o *Outbox) closeFiles() error {
	var errs []error
	for _, s := range o.segs {
		if s.f != nil {
			errs = append(errs, s.f.Close())
		}
	}
	o.segs = nil
	errs = append(errs, o.lock.Close())
	return errors.Join(errs...)
}
