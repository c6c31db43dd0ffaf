package outbox

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/tether/tether/internal/atomicfile"
)

// CorruptError describes damage to a segment that is not a torn tail: a
// bad header, a bad frame with intact records after it, a bad frame in a
// sealed segment. Open sets such damage aside (Damage); Read returns it
// for a record damaged on disk after Open.
type CorruptError struct {
	// Path is the segment file.
	Path string
	// Pos is the byte position of the damage in the file.
	Pos int64
	// Offset is the record offset expected there.
	Offset uint64
	// Reason says what is wrong.
	Reason string
	// oversized: the file is larger than any segment this outbox writes
	// (readLimit); only its first readLimit bytes were read.
	oversized bool
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("outbox: %s: byte %d (record %d): %s", e.Path, e.Pos, e.Offset, e.Reason)
}

// tornTail is a damaged end of the last segment that Open cuts off.
type tornTail struct {
	pos    int64 // where the damage begins: the segment's new size
	bytes  int64 // how many bytes are dropped
	reason string
}

// zeroBlock is the granularity of the all-zero test for torn writes: the
// smallest unit a disk writes, so a block the machine lost before writing
// reads as zeros (on filesystems that expose unwritten extents that way).
const zeroBlock = 512

// readLimit is the most of a segment's file Open reads into memory. The
// writer starts a new segment before one would pass SegmentBytes, so a
// larger file is damage (a file grown, or put there, by something else: a
// sparse file of gigabytes would otherwise be read whole); the frame
// header's worth on top is slack. Segments written at the default size
// stay readable by an outbox opened with a smaller Config.SegmentBytes.
func (c Config) readLimit() int64 {
	return max(c.SegmentBytes, DefaultSegmentBytes) + frameHeaderSize
}

// scanSegment reads a segment's file and indexes its frames. In a sealed
// segment (last == false) any bad frame is a CorruptError. In the last
// segment a bad frame starts a torn tail — what a crash in the middle of a
// write leaves — unless intact frames follow it and nothing shows a lost
// write: then it is corruption before the tail, and an error. With a
// CorruptError, s still indexes the intact frames before the damage, and
// s.size is where the damage begins. A file longer than limit is read up
// to limit only, and is damage from the first frame that is not intact
// within that (an oversized CorruptError).
func scanSegment(s *segment, last bool, limit int64) (*tornTail, error) {
	st, err := s.f.Stat()
	if err != nil {
		return nil, err
	}
	size := min(st.Size(), limit)
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(s.f, 0, size), b); err != nil {
		return nil, err
	}
	if why := checkSegHeader(b, s.first); why != "" {
		return nil, &CorruptError{Path: s.path, Offset: s.first, Reason: why}
	}
	p, off := segHeaderSize, s.first
	s.pos = s.pos[:0]
	for p < len(b) || st.Size() > limit {
		_, n, fst := parseFrame(b[p:], off)
		if fst == frameOK {
			s.pos = append(s.pos, uint32(p))
			p += n
			off++
			continue
		}
		s.size = int64(p)
		if st.Size() > limit {
			return nil, &CorruptError{Path: s.path, Pos: int64(p), Offset: off, oversized: true,
				Reason: fmt.Sprintf("file is %d bytes, more than the %d a segment of this outbox holds", st.Size(), limit)}
		}
		reason := "record runs past the end of the file"
		if fst == frameBad {
			reason = "record fails its checksum"
		}
		cerr := &CorruptError{Path: s.path, Pos: int64(p), Offset: off, Reason: reason}
		if !last {
			return nil, cerr
		}
		q := resync(b, p, off)
		if q < 0 {
			return &tornTail{pos: int64(p), bytes: int64(len(b) - p), reason: reason}, nil
		}
		if hasZeroBlock(b, p, q) {
			return &tornTail{pos: int64(p), bytes: int64(len(b) - p), reason: reason + ", then a block of zeros (a write lost in a machine crash)"}, nil
		}
		cerr.Reason += fmt.Sprintf("; an intact record %d follows at byte %d", binary.LittleEndian.Uint64(b[q+8:]), q)
		return nil, cerr
	}
	s.size = int64(p)
	return nil, nil
}

// resync looks past a bad frame at p (which should have held offset want)
// for any intact frame with an offset ≥ want, and returns its position, or
// -1. An intact frame there means the damage is not just an unfinished
// last write. The offset's plausible range is checked before the CRC, so
// scanning garbage costs little more than reading it.
func resync(b []byte, p int, want uint64) int {
	maxOff := want + uint64(len(b)-p)/frameHeaderSize
	for q := p + 1; q+frameHeaderSize <= len(b); q++ {
		off := binary.LittleEndian.Uint64(b[q+8:])
		if off < want || off > maxOff {
			continue
		}
		if _, _, st := parseFrame(b[q:], off); st == frameOK {
			return q
		}
	}
	return -1
}

// hasZeroBlock reports whether b[p:q] contains a whole aligned block of
// zeros: the mark of a page the disk never wrote, inside a write that the
// machine's crash cut short, which may leave later pages of the same write
// intact. No record ever holds such a block unless its data does, and a
// record whose Append returned was synced, so its pages are not lost.
func hasZeroBlock(b []byte, p, q int) bool {
	for start := (p + zeroBlock - 1) / zeroBlock * zeroBlock; start+zeroBlock <= q; start += zeroBlock {
		zero := true
		for _, c := range b[start : start+zeroBlock] {
			if c != 0 {
				zero = false
				break
			}
		}
		if zero {
			return true
		}
	}
	return false
}

// keepIntact replaces an oversized segment's file (see readLimit) by a
// copy of its intact frames, the s.size bytes before the damage, keeping
// the whole file in the quarantine directory. Cutting it in place, as
// other damage is cut, would first copy its tail aside: gigabytes, of a
// sparse file. The original is linked into quarantine before the copy
// replaces it, so a crash at any point leaves the records either in the
// outbox or in quarantine.
func (o *Outbox) keepIntact(v *salvage, s *segment) error {
	tmp := s.path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, io.NewSectionReader(s.f, 0, s.size))
	if err == nil {
		err = o.sync(f)
	}
	if err == nil {
		err = v.link(s.path)
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("outbox: set aside the oversized %s: %w", s.path, err)
	}
	_ = s.f.Close()
	s.f = f
	return atomicfile.SyncDir(o.dir, o.sync)
}
