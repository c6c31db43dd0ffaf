package outbox_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/internal/outbox"
)

// Records of the damage tests: recSize-byte records in segments of segSize,
// so records 1-4 fill the first segment and 5-n the second.
const (
	recSize = 90
	frame   = outbox.FrameHeaderSize + recSize
	segSize = outbox.SegHeaderSize + 4*frame
)

// makeLog writes records 1..n to a fresh directory, closes it and returns
// the directory.
func makeLog(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{SegmentBytes: segSize})
	appendRecs(t, o, 1, n, recSize)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies the files of src into a fresh directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// edit rewrites one file of dir with fn.
func edit(t *testing.T, dir, name string, fn func([]byte) []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a logger whose output a test reads.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// checkRepaired opens dir, expects records 1..n intact and a logged cut
// (when cut); reopens it, expecting nothing left to cut; then appends n+1
// and n+2 and reads them back after another reopen.
func checkRepaired(t *testing.T, dir string, n int, cut bool) {
	t.Helper()
	for round, wantCut := range []bool{cut, false} {
		log, buf := logBuffer()
		o := open(t, dir, outbox.Config{SegmentBytes: segSize, Logger: log})
		checkRecs(t, readAll(t, o, 0), 1, n, recSize)
		if got := strings.Contains(buf.String(), "torn tail"); got != wantCut {
			t.Fatalf("open %d: torn tail logged: got %v, want %v; log: %s", round+1, got, wantCut, buf.String())
		}
		if round == 1 {
			appendRecs(t, o, n+1, n+2, recSize)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
	o := open(t, dir, outbox.Config{SegmentBytes: segSize})
	checkRecs(t, readAll(t, o, 0), 1, n+2, recSize)
}

func TestTornTailTruncatedAtEveryByte(t *testing.T) {
	const n = 6 // the last segment holds records 5 and 6
	base := makeLog(t, n)
	last := outbox.SegName(5)
	full := int64(outbox.SegHeaderSize + 2*frame)
	for cut := full - frame; cut < full; cut++ {
		dir := copyDir(t, base)
		if err := os.Truncate(filepath.Join(dir, last), cut); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("cut at byte %d of the record", cut-(full-frame)), func(t *testing.T) {
			// A cut at the frame's start leaves a clean end: nothing to log.
			checkRepaired(t, dir, n-1, cut > full-frame)
		})
	}
}

func TestTornTailGarbage(t *testing.T) {
	const n = 6
	base := makeLog(t, n)
	header := func(length uint32, off uint64) []byte {
		h := make([]byte, outbox.FrameHeaderSize)
		binary.LittleEndian.PutUint32(h, length)
		binary.LittleEndian.PutUint32(h[4:], 0xdeadbeef)
		binary.LittleEndian.PutUint64(h[8:], off)
		return h
	}
	cases := []struct {
		name string
		tail func(seg []byte) []byte
	}{
		{name: "one byte", tail: func([]byte) []byte { return []byte{0x42} }},
		{name: "a header's worth of ones", tail: func([]byte) []byte { return bytes.Repeat([]byte{0xff}, outbox.FrameHeaderSize) }},
		{name: "zeros", tail: func([]byte) []byte { return make([]byte, 4096) }},
		{name: "text", tail: func([]byte) []byte { return bytes.Repeat([]byte("not a frame "), 40) }},
		{name: "a header claiming a huge record", tail: func([]byte) []byte { return header(1<<31, n+1) }},
		{name: "a header with a bad checksum and its data", tail: func([]byte) []byte {
			return append(header(recSize, n+1), rec(n+1, recSize)...)
		}},
		{name: "the last frame again (a stale offset)", tail: func(seg []byte) []byte {
			return append([]byte(nil), seg[len(seg)-frame:]...)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, base)
			edit(t, dir, outbox.SegName(5), func(b []byte) []byte { return append(b, tc.tail(b)...) })
			checkRepaired(t, dir, n, true)
		})
	}
}

// flip changes one byte of b at i.
func flip(i int) func([]byte) []byte {
	return func(b []byte) []byte {
		b[i] ^= 0x5a
		return b
	}
}

// addSegment writes a segment of records from..to into dir by appending
// them to a copy and keeping only that copy's last segment.
func addSegment(t *testing.T, dir string, from, to int) {
	t.Helper()
	src := copyDir(t, dir)
	o := open(t, src, outbox.Config{SegmentBytes: segSize})
	appendRecs(t, o, from, to, recSize)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(src, outbox.SegName(uint64(from))))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, outbox.SegName(uint64(from))), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLostWriteTruncated: a machine crash may persist a write's later
// pages and not an earlier one, which then reads as zeros; the zeros mark
// the damage as a lost write (never synced), so Open cuts it off even
// though intact records follow.
func TestLostWriteTruncated(t *testing.T) {
	const size = 1500 // records larger than a 512-byte block
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{})
	appendRecs(t, o, 1, 5, size)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	rec3 := outbox.SegHeaderSize + 2*(outbox.FrameHeaderSize+size)
	block := (rec3 + outbox.FrameHeaderSize + 511) / 512 * 512
	edit(t, dir, outbox.SegName(1), func(b []byte) []byte {
		copy(b[block:block+512], make([]byte, 512))
		return b
	})
	log, buf := logBuffer()
	o = open(t, dir, outbox.Config{Logger: log})
	checkRecs(t, readAll(t, o, 0), 1, 2, size)
	if !strings.Contains(buf.String(), "zeros") {
		t.Fatalf("got log %q, want the cut explained by a block of zeros", buf.String())
	}
	appendRecs(t, o, 3, 3, size)
}

func TestReadReportsLaterDamage(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, outbox.Config{})
	appendRecs(t, o, 1, 3, 50)
	edit(t, dir, outbox.SegName(1), flip(outbox.SegHeaderSize+outbox.FrameHeaderSize+66+20)) // record 2's data
	// Still in the outbox's memory, the records read as they were written.
	if got, err := o.Read(1, 10); err != nil || len(got) != 3 {
		t.Fatalf("Read of records held in memory: got %d records, %v; want 3", len(got), err)
	}
	// Pushed out of memory by later ones, they are read from the file:
	// the intact record before the damage, then an error at it.
	appendRecs(t, o, 4, 6, 100<<10)
	got, err := o.Read(1, 10)
	if err != nil || len(got) != 1 || got[0].Offset != 1 {
		t.Fatalf("Read up to a record damaged after Open: got %d records, err %v; want record 1 alone", len(got), err)
	}
	got, err = o.Read(2, 10)
	var ce *outbox.CorruptError
	if !errors.As(err, &ce) || ce.Offset != 2 {
		t.Fatalf("Read from a record damaged after Open: got %d records, err %v; want a *CorruptError at offset 2", len(got), err)
	}
	// A segment cut short under the outbox is damage too.
	if err := os.Truncate(filepath.Join(dir, outbox.SegName(1)), 0); err != nil {
		t.Fatal(err)
	}
	got, err = o.Read(1, 10)
	if !errors.As(err, &ce) || ce.Offset != 1 {
		t.Fatalf("Read from a truncated segment: got %d records, err %v; want a *CorruptError at offset 1", len(got), err)
	}
}
