package outbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tether/tether/internal/outbox"
)

// Damage beyond a torn tail (issue 28): Open keeps every intact record
// before it, moves the damaged bytes and everything after them aside
// (never deleting them), reports it (Outbox.Damage), and the outbox goes
// on. The logs are makeLog's: segments 1 (records 1-4) and 5 (records
// 5-8).

// at is where record i's frame starts in its segment.
func at(i int) int { return outbox.SegHeaderSize + (i-1)%4*frame }

// overwrite writes b over a file's bytes from pos.
func overwrite(pos int, b []byte) func([]byte) []byte {
	return func(seg []byte) []byte {
		copy(seg[pos:], b)
		return seg
	}
}

// truncate keeps a file's first n bytes.
func truncate(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }

// writeFile replaces one file of dir.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// unreadable puts a directory where a file of dir was: opening it for
// reading and writing fails, even for root (for whom mode bits do not).
func unreadable(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
}

func TestDamageSalvaged(t *testing.T) {
	const n = 8
	cases := []struct {
		name string
		// ack, if set, acknowledges records up to it before the damage.
		ack    uint64
		damage func(t *testing.T, dir string)
		// Records from..to are read back after Open.
		from, to int
		// lost is Damage().FirstLost; noDamage: Damage() is nil.
		lost     uint64
		noDamage bool
		// next is the offset the next record gets.
		next uint64
	}{
		{name: "garbage in the middle of the last segment", from: 1, to: 5, lost: 6, next: 6, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), overwrite(at(6)+5, bytes.Repeat([]byte{0xab}, 40)))
		}},
		{name: "data of a middle record of the last segment", from: 1, to: 5, lost: 6, next: 6, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), flip(at(6)+outbox.FrameHeaderSize+10))
		}},
		{name: "length of a middle record of the last segment", from: 1, to: 5, lost: 6, next: 6, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), flip(at(6)))
		}},
		{name: "checksum of the first record of the last segment", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), flip(at(5)+5))
		}},
		{name: "last record of a sealed segment", from: 1, to: 3, lost: 4, next: 4, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(1), flip(at(4)+outbox.FrameHeaderSize+1))
		}},
		{name: "sealed segment cut short", from: 1, to: 3, lost: 4, next: 4, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(1), func(b []byte) []byte { return b[:len(b)-3] })
		}},
		{name: "zero-length last segment", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), truncate(0))
		}},
		{name: "zero-length first segment", from: 1, to: 0, lost: 1, next: 1, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(1), truncate(0))
		}},
		{name: "truncated header", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), truncate(10))
		}},
		{name: "bad magic", from: 1, to: 0, lost: 1, next: 1, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(1), flip(0))
		}},
		{name: "unknown format version", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 9); return b })
		}},
		{name: "header naming another first offset", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), func(b []byte) []byte { binary.LittleEndian.PutUint64(b[8:], 6); return b })
		}},
		{name: "unreadable last segment", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			unreadable(t, dir, outbox.SegName(5))
		}},
		{name: "unreadable first segment", from: 1, to: 0, lost: 1, next: 1, damage: func(t *testing.T, dir string) {
			unreadable(t, dir, outbox.SegName(1))
		}},
		{name: "a segment missing in the middle", from: 1, to: 4, lost: 5, next: 5, damage: func(t *testing.T, dir string) {
			addSegment(t, dir, 9, 12)
			if err := os.Remove(filepath.Join(dir, outbox.SegName(5))); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "garbled acked file", from: 1, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "7\x00garbage")
		}},
		{name: "garbled acked file after acknowledgements", ack: 6, from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "§")
		}},
		{name: "empty acked file", ack: 6, from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "")
		}},
		{name: "unreadable acked file", ack: 2, from: 1, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			unreadable(t, dir, "acked")
		}},
		{name: "acked file missing after acknowledgements", ack: 6, from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "acked")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "acked file before the first segment", ack: 6, from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "2\n")
		}},
		{name: "the first segment missing", from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, outbox.SegName(1))); err != nil {
				t.Fatal(err)
			}
		}},
		// An Ack syncs its records first, so a file past the end is
		// damaged (or the log lost its end): every record is read again.
		{name: "acked past the end of the log", from: 1, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "12\n")
		}},
		{name: "acked past the end of the log after acknowledgements", ack: 6, from: 5, to: 8, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "96\n") // 6 with a digit changed
		}},
		{name: "acked past the end of the log, a record damaged", ack: 6, from: 5, to: 6, lost: 7, next: 7, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "96\n")
			edit(t, dir, outbox.SegName(5), flip(at(7)+outbox.FrameHeaderSize+3))
		}},
		{name: "every segment missing", ack: 6, from: 1, to: 0, lost: 7, next: 7, damage: func(t *testing.T, dir string) {
			for _, f := range []uint64{1, 5} {
				if err := os.Remove(filepath.Join(dir, outbox.SegName(f))); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}},
		// The acked file then names a record the log does not hold: it is
		// not trusted (the reader learns at attach that it has more).
		{name: "an acknowledged record damaged, unacknowledged ones after it", ack: 6, from: 5, to: 5, lost: 6, next: 6, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), flip(at(6)+outbox.FrameHeaderSize+3))
		}},
		// Controls: what Open repairs or ignores is no damage.
		{name: "torn tail", from: 1, to: 8, noDamage: true, next: 9, damage: func(t *testing.T, dir string) {
			edit(t, dir, outbox.SegName(5), func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0x42}, 30)...) })
		}},
		{name: "damage in a segment acknowledged whole", from: 5, to: 8, noDamage: true, next: 9, damage: func(t *testing.T, dir string) {
			writeFile(t, dir, "acked", "4\n") // as a crash between the ack and the segment's removal leaves it
			edit(t, dir, outbox.SegName(1), flip(at(2)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := open(t, dir, outbox.Config{SegmentBytes: segSize})
			appendRecs(t, o, 1, n, recSize)
			if tc.ack > 0 {
				if err := o.Ack(tc.ack); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			before := snapshot(t, dir)

			o = open(t, dir, outbox.Config{SegmentBytes: segSize})
			d := o.Damage()
			switch {
			case tc.noDamage && d != nil:
				t.Fatalf("Damage: got %v, want none", d)
			case !tc.noDamage && d == nil:
				t.Fatalf("Damage: got none, want FirstLost %d", tc.lost)
			case d != nil && (d.FirstLost != tc.lost || len(d.Reasons) == 0):
				t.Fatalf("Damage: got FirstLost %d, reasons %q; want FirstLost %d and a reason", d.FirstLost, d.Reasons, tc.lost)
			}
			if d != nil {
				checkEvidence(t, dir, d.Quarantine, before)
			}
			checkRecs(t, readAll(t, o, 0), tc.from, tc.to, recSize)
			if got := o.Stats().Next; got != tc.next {
				t.Fatalf("next offset: got %d, want %d", got, tc.next)
			}
			// The outbox goes on: a record appended now is kept, and the
			// next Open finds nothing wrong.
			next := int(tc.next)
			appendRecs(t, o, next, next, recSize)
			if err := o.Close(); err != nil {
				t.Fatal(err)
			}
			o = open(t, dir, outbox.Config{SegmentBytes: segSize})
			if d := o.Damage(); d != nil {
				t.Fatalf("second Open: got damage %v, want none", d)
			}
			got := readAll(t, o, 0)
			if kept := max(tc.to-tc.from+1, 0); kept > 0 {
				checkRecs(t, got[:min(kept, len(got))], tc.from, tc.to, recSize)
			}
			checkRecs(t, got[max(tc.to-tc.from+1, 0):], next, next, recSize)
		})
	}
}

// snapshot reads every file of dir (not its subdirectories).
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && e.Name() != "LOCK" {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = b
		}
	}
	return out
}

// checkEvidence checks that Open deleted nothing of the files before it
// (a damaged outbox's): each is in dir as it was, or cut short in dir
// with the rest in the quarantine directory, or moved there whole; the
// acked file may be written afresh once its old content is there.
func checkEvidence(t *testing.T, dir, quarantine string, before map[string][]byte) {
	t.Helper()
	moved := map[string][]byte{}
	if quarantine != "" {
		if !strings.HasPrefix(quarantine, filepath.Join(dir, "quarantine")+string(filepath.Separator)) {
			t.Fatalf("quarantine: got %s, want a directory under %s/quarantine", quarantine, dir)
		}
		moved = snapshot(t, quarantine)
	}
	for name, was := range before {
		kept, ok := moved[name]
		if !ok {
			var err error
			if kept, err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: deleted, and not in the quarantine (%v)", name, err)
				continue
			}
		}
		if tail, cut := tailOf(moved, name); cut >= 0 {
			if !bytes.Equal(kept, was[:cut]) || !bytes.Equal(tail, was[cut:]) {
				t.Errorf("%s: got %d bytes kept and %d set aside from byte %d, want the file's %d bytes split there", name, len(kept), len(tail), cut, len(was))
			}
		} else if !bytes.Equal(kept, was) {
			t.Errorf("%s: got %q, want it as it was, %q, or in the quarantine", name, kept, was)
		}
	}
}

// tailOf finds the quarantined end of segment name: its bytes and where
// they were cut, -1 if there is none.
func tailOf(moved map[string][]byte, name string) ([]byte, int) {
	for m, b := range moved {
		if pos, ok := strings.CutPrefix(m, name+".from-byte-"); ok {
			n, err := strconv.Atoi(pos)
			if err == nil {
				return b, n
			}
		}
	}
	return nil, -1
}

// TestDamageQuarantineDir: the damaged files go where Config says, and a
// damaged outbox is still appended to, acknowledged and read as any.
func TestDamageQuarantineDir(t *testing.T) {
	base := makeLog(t, 8)
	dir := copyDir(t, base)
	edit(t, dir, outbox.SegName(5), flip(at(7)+outbox.FrameHeaderSize+1))
	q := filepath.Join(t.TempDir(), "evidence")
	o := open(t, dir, outbox.Config{SegmentBytes: segSize, QuarantineDir: q})
	d := o.Damage()
	if d == nil || d.FirstLost != 7 || filepath.Dir(d.Quarantine) != q {
		t.Fatalf("Damage: got %+v, want FirstLost 7 in a directory under %s", d, q)
	}
	if _, err := os.Stat(filepath.Join(d.Quarantine, outbox.SegName(5)+".from-byte-"+strconv.Itoa(at(7)))); err != nil {
		t.Fatalf("the damaged end of segment 5: %v", err)
	}
	if !strings.Contains(d.String(), "records from offset 7 on are lost") {
		t.Errorf("Damage.String: got %q, want it to say which records are lost", d.String())
	}
	appendRecs(t, o, 7, 12, recSize)
	if err := o.Ack(9); err != nil {
		t.Fatal(err)
	}
	checkRecs(t, readAll(t, o, 0), 10, 12, recSize)
	if off, err := o.Append(context.Background(), rec(13, recSize)); err != nil || off != 13 {
		t.Fatalf("Append: got %d, %v; want 13", off, err)
	}
}

// TestSetAsideAndSkip: damage a Read finds after Open is copied aside
// (SetAside), and Skip makes Read pass over the damaged records to the
// ones its user appends after them, also when a Read starts before the
// damage or among the records still in memory.
func TestSetAsideAndSkip(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{SegmentBytes: segSize})
	appendRecs(t, o, 1, 8, recSize)
	edit(t, dir, outbox.SegName(5), flip(at(6)+outbox.FrameHeaderSize+2))
	// Records 1-8 are all still in memory: push them out with big ones.
	appendRecs(t, o, 9, 9, 200)
	for i := 10; i < 10+(300<<10)/recSize; i++ {
		appendRecs(t, o, i, i, recSize)
	}
	last := o.Stats().Next - 1
	got, err := o.Read(1, 100)
	if err != nil || len(got) != 5 {
		t.Fatalf("Read before the damage: got %d records, %v; want 1-5", len(got), err)
	}
	_, err = o.Read(6, 100)
	var ce *outbox.CorruptError
	if !errors.As(err, &ce) || ce.Offset != 6 {
		t.Fatalf("Read at the damage: got %v, want a *CorruptError at 6", err)
	}
	d, err := o.SetAside(ce.Offset, ce.Error())
	if err != nil {
		t.Fatal(err)
	}
	if d.FirstLost != 6 || d.Quarantine == "" {
		t.Fatalf("SetAside: got %+v, want FirstLost 6 and a quarantine directory", d)
	}
	for _, seg := range []uint64{5} {
		if _, err := os.Stat(filepath.Join(d.Quarantine, outbox.SegName(seg))); err != nil {
			t.Fatalf("the damaged segment's copy: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(d.Quarantine, outbox.SegName(1))); !os.IsNotExist(err) {
		t.Fatalf("segment 1, before the damage: got %v, want it not copied", err)
	}
	off, err := o.Append(context.Background(), rec(int(last+1), recSize))
	if err != nil {
		t.Fatal(err)
	}
	o.Skip(6, last)
	cases := []struct {
		name string
		from uint64
		want []uint64
	}{
		{name: "from before the damage", from: 1, want: []uint64{1, 2, 3, 4, 5}},
		{name: "from the damage", from: 6, want: []uint64{off}},
		{name: "from among the skipped, in memory", from: last, want: []uint64{off}},
		{name: "from after them", from: off, want: []uint64{off}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := o.Read(tc.from, 100)
			if err != nil {
				t.Fatal(err)
			}
			var offs []uint64
			for _, r := range got {
				offs = append(offs, r.Offset)
			}
			if fmt.Sprint(offs) != fmt.Sprint(tc.want) {
				t.Fatalf("Read(%d): got offsets %v, want %v", tc.from, offs, tc.want)
			}
		})
	}
	// Acknowledging past the skipped records works as ever.
	if err := o.Ack(off); err != nil {
		t.Fatal(err)
	}
	if got, err := o.Read(0, 10); err != nil || len(got) != 0 {
		t.Fatalf("Read after the last ack: got %d records, %v; want none", len(got), err)
	}
}
