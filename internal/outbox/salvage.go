package outbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tether/tether/internal/atomicfile"
)

// Damage is what Open found wrong in an outbox's directory beyond a torn
// tail (which a crash leaves, and Open cuts off with only a log line),
// and what it did about it. The intact records before the damage are
// kept and delivered; the damaged bytes, and every record after them, are
// moved to the quarantine directory, never deleted; the outbox goes on.
type Damage struct {
	// Reasons says what was found, one entry per damaged file.
	Reasons []string
	// FirstLost is the offset of the first record that will never be
	// read: the records from there on (if the log held any) were set
	// aside or were gone. The outbox numbers its next record FirstLost.
	// 0 when no record was lost: only the acked file was damaged, and
	// every record held is read again from the first, so the reader sees
	// records it may have committed already (it must deduplicate them by
	// offset, as after any reconnect).
	FirstLost uint64
	// Quarantine is the directory the damaged files went to; "" when
	// nothing was moved.
	Quarantine string
}

// String sums the damage up in one line, for logs and for the people the
// outbox's user tells.
func (d *Damage) String() string {
	s := strings.Join(d.Reasons, "; ")
	if d.FirstLost != 0 {
		s += fmt.Sprintf("; records from offset %d on are lost", d.FirstLost)
	} else {
		s += "; no record was lost"
	}
	if d.Quarantine != "" {
		s += "; the damaged files were moved to " + d.Quarantine
	}
	return s
}

// Damage reports what Open found damaged and set aside, nil if nothing.
func (o *Outbox) Damage() *Damage { return o.damage }

// salvage collects what load finds damaged and moves it aside.
type salvage struct {
	dir, root string
	// sub is the quarantine subdirectory of this Open, made on first use.
	sub     string
	reasons []string
	moved   bool
}

func (v *salvage) note(format string, args ...any) {
	v.reasons = append(v.reasons, fmt.Sprintf(format, args...))
}

// target returns (making it) the directory damaged files go to.
func (v *salvage) target() (string, error) {
	if v.sub == "" {
		root := v.root
		if root == "" {
			root = filepath.Join(v.dir, "quarantine")
		}
		sub := filepath.Join(root, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return "", fmt.Errorf("outbox: quarantine: %w", err)
		}
		v.sub = sub
	}
	return v.sub, nil
}

// move renames a damaged file (or whatever stands under a segment's name)
// into the quarantine directory.
func (v *salvage) move(path string) error {
	t, err := v.target()
	if err != nil {
		return err
	}
	if err := os.Rename(path, filepath.Join(t, filepath.Base(path))); err != nil {
		return fmt.Errorf("outbox: quarantine %s: %w", path, err)
	}
	v.moved = true
	return nil
}

// link keeps a damaged file in the quarantine directory under its own
// name, a hard link, while the outbox replaces it (keepIntact).
func (v *salvage) link(path string) error {
	t, err := v.target()
	if err != nil {
		return err
	}
	if err := os.Link(path, filepath.Join(t, filepath.Base(path))); err != nil {
		return fmt.Errorf("outbox: quarantine %s: %w", path, err)
	}
	v.moved = true
	return nil
}

// copyTail copies a segment's bytes from pos on into the quarantine
// directory and syncs the copy, before the segment is cut there.
func (v *salvage) copyTail(s *segment, pos int64) error {
	return v.copyFrom(s, pos, fmt.Sprintf("%s.from-byte-%d", filepath.Base(s.path), pos))
}

// copyFrom copies a segment's bytes from pos on into the quarantine
// directory under name, and syncs the copy.
func (v *salvage) copyFrom(s *segment, pos int64, name string) error {
	t, err := v.target()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(filepath.Join(t, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: quarantine: %w", err)
	}
	_, err = io.Copy(dst, io.NewSectionReader(s.f, pos, 1<<62))
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("outbox: quarantine the end of %s: %w", s.path, err)
	}
	v.moved = true
	return nil
}

// ackedState is what readAcked found.
type ackedState int

const (
	ackedOK      ackedState = iota
	ackedMissing            // no acked file: nothing acknowledged yet
	ackedBad                // unreadable or not an offset
)

// readAcked returns the acknowledged offset stored in dir and whether the
// file is usable (why not, if not).
func readAcked(dir string) (uint64, ackedState, string) {
	b, err := os.ReadFile(filepath.Join(dir, ackedFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, ackedMissing, ""
	case err != nil:
		return 0, ackedBad, err.Error()
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(string(b), "\n"), 10, 64)
	if err != nil {
		return 0, ackedBad, fmt.Sprintf("not an offset: %.40q", b)
	}
	return n, ackedOK, ""
}

// listSegments returns the first offsets of dir's segment files, ascending,
// and removes leftovers of interrupted atomic writes.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var firsts []uint64
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			continue
		}
		if first, ok := parseSegName(name); ok {
			firsts = append(firsts, first)
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	return firsts, nil
}

// load reads the directory: acked offset, segment list, every live
// segment. What it finds damaged it moves aside (salvage), keeping every
// intact record before the damage; it fails only when the directory
// itself cannot be read or changed.
func (o *Outbox) load() error {
	v := &salvage{dir: o.dir, root: o.cfg.QuarantineDir}
	firsts, err := listSegments(o.dir)
	if err != nil {
		return err
	}
	acked, rewrite, err := o.loadAcked(v, firsts)
	if err != nil {
		return err
	}
	// Segments wholly acknowledged are left only by a crash between the
	// ack and their removal: they are removed without being read (below,
	// once the log is known to reach the acknowledged offset).
	all := firsts
	var done []uint64
	for len(firsts) > 1 && firsts[1] <= acked+1 {
		done, firsts = append(done, firsts[0]), firsts[1:]
	}
	lost, err := o.loadSegments(v, firsts, true)
	if err != nil {
		return err
	}
	next := lost
	if n := len(o.segs); n > 0 {
		next = o.segs[n-1].first + o.segs[n-1].count()
	} else if len(firsts) == 0 {
		next = acked + 1
		if acked > 0 {
			lost = next
			v.note("no segment files, yet records up to %d were acknowledged", acked)
		}
	}
	if acked >= next && len(all) > 0 {
		// The acked file names records the log does not hold. An Ack
		// syncs its records before it writes the file, so either the file
		// is damaged (a digit changed) or the log lost its end: trusting
		// the file would drop every unacknowledged record it holds. Every
		// record held is read again instead; the reader drops those it
		// has, and one that has more than the log learns it at attach.
		if lost, err = o.distrustAcked(v, done, acked, next, lost); err != nil {
			return err
		}
		acked, rewrite, done = all[0]-1, true, nil
		next = max(lost, all[0])
		if n := len(o.segs); n > 0 {
			next = o.segs[n-1].first + o.segs[n-1].count()
		}
		if lost != 0 {
			lost = next
		}
	}
	for _, first := range done {
		// Evidence if the acked file proved wrong, else just acknowledged.
		path := filepath.Join(o.dir, segName(first))
		if lost != 0 {
			err = v.move(path)
		} else {
			err = os.Remove(path)
		}
		if err != nil {
			return err
		}
	}
	if len(o.segs) == 0 {
		s, err := createSegment(o.dir, next, o.sync)
		if err != nil {
			return err
		}
		o.segs = []*segment{s}
	}
	o.acked, o.next = acked, next
	if rewrite {
		if err := writeAcked(o.dir, acked); err != nil {
			return err
		}
	}
	if v.moved {
		// Both ends of the moves, so that a crash keeps the evidence.
		for _, d := range []string{v.sub, o.dir} {
			if err := atomicfile.SyncDir(d, o.sync); err != nil {
				return err
			}
		}
	}
	if len(v.reasons) > 0 {
		o.damage = &Damage{Reasons: v.reasons, FirstLost: lost, Quarantine: v.sub}
		o.log.Error("outbox: damage found and set aside; the intact records before it are kept", "dir", o.dir, "damage", o.damage.String())
	}
	// What a crashed process wrote without syncing is still in the page
	// cache: make it durable before anything relies on it.
	last := o.segs[len(o.segs)-1]
	if err := last.f.Sync(); err != nil {
		return err
	}
	o.durable.Store(o.next - 1)
	o.pending = o.bytesIn(acked+1, o.next-1)
	return nil
}

// loadAcked reads the acknowledged offset. An acked file that cannot be
// read or parsed, or that names an offset before the first record held
// (segments are removed only once the file covers them, so the file is
// the one at fault), is set aside and taken as "nothing held is
// acknowledged": every record held is read again, and nothing is lost.
// rewrite says that the file must be written afresh.
func (o *Outbox) loadAcked(v *salvage, firsts []uint64) (acked uint64, rewrite bool, err error) {
	acked, state, why := readAcked(o.dir)
	held := uint64(1)
	if len(firsts) > 0 {
		held = firsts[0]
	}
	switch {
	case state == ackedBad:
		v.note("%s: unreadable (%s); every record held is read again", ackedFile, why)
		if err := v.move(filepath.Join(o.dir, ackedFile)); err != nil {
			return 0, false, err
		}
	case acked+1 >= held:
		return acked, false, nil
	case state == ackedMissing:
		v.note("%s is missing, yet the first segment starts at record %d; every record held is read again", ackedFile, held)
	default:
		v.note("%s says %d, yet the first segment starts at record %d; every record held is read again", ackedFile, acked, held)
		if err := v.move(filepath.Join(o.dir, ackedFile)); err != nil {
			return 0, false, err
		}
	}
	return held - 1, true, nil
}

// distrustAcked sets aside an acked file that names acked, past the
// log's end (next), and loads the segments it had made look acknowledged
// (done) in front of those loaded already. It returns the offset the log
// now ends before if damage was found (lost, or earlier), else 0.
func (o *Outbox) distrustAcked(v *salvage, done []uint64, acked, next, lost uint64) (uint64, error) {
	v.note("%s says %d, yet the log ends at %d; every record held is read again", ackedFile, acked, next-1)
	if err := v.move(filepath.Join(o.dir, ackedFile)); err != nil {
		return 0, err
	}
	kept := o.segs
	o.segs = nil
	dlost, err := o.loadSegments(v, done, false) // kept, or the damage, follows
	if err != nil {
		return 0, err
	}
	if n := len(o.segs); dlost == 0 && n > 0 && len(kept) > 0 {
		if want := o.segs[n-1].first + o.segs[n-1].count(); kept[0].first != want {
			v.note("%s: the segment before it ends before record %d", segName(kept[0].first), want)
			dlost = want
		}
	}
	if dlost == 0 {
		o.segs = append(o.segs, kept...)
		return lost, nil
	}
	for _, s := range kept {
		_ = s.f.Close()
		if err := v.move(s.path); err != nil {
			return 0, err
		}
	}
	return dlost, nil
}

// loadSegments opens and checks the segments in order, keeping each
// intact one in o.segs. The first damage found — a file that cannot be
// read, a bad header, a bad frame (other than a torn tail of the last
// segment, which is cut off), a segment that does not continue the one
// before — ends the log there: the damaged bytes and every later segment
// are moved aside, and lost is the offset the log now ends before (0 if
// nothing was damaged). tail says the last of firsts ends the log (its
// torn tail is cut off, not damage).
func (o *Outbox) loadSegments(v *salvage, firsts []uint64, tail bool) (lost uint64, err error) {
	for i, first := range firsts {
		path := filepath.Join(o.dir, segName(first))
		if lost != 0 {
			if err := v.move(path); err != nil {
				return 0, err
			}
			continue
		}
		if n := len(o.segs); n > 0 {
			if want := o.segs[n-1].first + o.segs[n-1].count(); first != want {
				v.note("%s: the segment before it ends before record %d", segName(first), want)
				lost = want
				if err := v.move(path); err != nil {
					return 0, err
				}
				continue
			}
		}
		s, cut, err := o.loadSegment(v, path, first, tail && i == len(firsts)-1)
		if err != nil {
			return 0, err
		}
		if s != nil {
			o.segs = append(o.segs, s)
		}
		lost = cut
	}
	return lost, nil
}

// loadSegment opens and checks one segment. It returns the segment (nil
// if nothing of it is intact, the file then moved aside) and, if it was
// damaged, the offset of the first record lost.
func (o *Outbox) loadSegment(v *salvage, path string, first uint64, last bool) (*segment, uint64, error) {
	s := &segment{first: first, path: path}
	var err error
	if s.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		v.note("%s: cannot be opened: %v", filepath.Base(path), err)
		return nil, first, v.move(path)
	}
	torn, err := scanSegment(s, last, o.cfg.readLimit())
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		v.note("%s: byte %d (record %d): %s", filepath.Base(path), ce.Pos, ce.Offset, ce.Reason)
		if len(s.pos) == 0 {
			_ = s.f.Close()
			return nil, first, v.move(path)
		}
		if ce.oversized {
			if err := o.keepIntact(v, s); err != nil {
				_ = s.f.Close()
				return nil, 0, err
			}
			return s, s.first + s.count(), nil
		}
		if err := v.copyTail(s, s.size); err != nil {
			_ = s.f.Close()
			return nil, 0, err
		}
		if err := o.cut(s); err != nil {
			_ = s.f.Close()
			return nil, 0, err
		}
		return s, s.first + s.count(), nil
	case err != nil:
		_ = s.f.Close()
		v.note("%s: cannot be read: %v", filepath.Base(path), err)
		return nil, first, v.move(path)
	}
	if torn != nil {
		if err := o.cut(s); err != nil {
			_ = s.f.Close()
			return nil, 0, err
		}
		o.log.Warn("outbox: cut a torn tail off the last segment", "segment", s.path, "pos", torn.pos, "droppedBytes", torn.bytes, "nextOffset", s.first+s.count(), "reason", torn.reason)
	}
	return s, 0, nil
}

// cut truncates a segment's file to its intact size and syncs it.
func (o *Outbox) cut(s *segment) error {
	if err := s.f.Truncate(s.size); err != nil {
		return err
	}
	return o.sync(s.f)
}

// SetAside deals with damage Read found after Open (a *CorruptError at
// offset from): it copies the segments holding the records from there
// on into the quarantine directory and returns the Damage to report. The
// log itself is left as it is, for the records after the damage may be
// read still; Skip then hides the damaged ones from Read. The next Open
// finds the damage again and sets it aside for good.
func (o *Outbox) SetAside(from uint64, why string) (*Damage, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return nil, ErrClosed
	}
	v := &salvage{dir: o.dir, root: o.cfg.QuarantineDir}
	v.note("%s", why)
	for _, s := range o.segs {
		if s.count() > 0 && s.last() < from {
			continue
		}
		if err := v.copyFrom(s, 0, filepath.Base(s.path)); err != nil {
			return nil, err
		}
	}
	d := &Damage{Reasons: v.reasons, FirstLost: from, Quarantine: v.sub}
	o.log.Error("outbox: damage found by a read; the damaged segments were copied aside", "dir", o.dir, "damage", d.String())
	return d, nil
}

// Skip makes Read pass over the records from..to, which are damaged
// (SetAside): a Read that would return one returns the records before
// it, and one that starts among them starts after them. It holds for the
// life of this Outbox.
func (o *Outbox) Skip(from, to uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if from > 0 && to >= from {
		o.skipFrom, o.skipTo = from, to
	}
}
