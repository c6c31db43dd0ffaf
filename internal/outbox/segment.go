package outbox

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tether/tether/internal/atomicfile"
)

const (
	// segMagic opens every segment file; segVersion is the frame format.
	segMagic   = "TOBX"
	segVersion = 1
	// segHeaderSize: magic (4), version (4), first offset (8).
	segHeaderSize = 16
	// frameHeaderSize: length (4), CRC32C (4), offset (8).
	frameHeaderSize = 16
	// segSuffix names segment files; tmpSuffix names files being written
	// before their rename, which Open removes.
	segSuffix = ".seg"
	tmpSuffix = atomicfile.TempSuffix // the acked file's too
)

// castagnoli is the CRC32C table (hardware-accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segment is one file of the log. Its records have consecutive offsets from
// first; pos holds where each frame starts, so a read or an ack finds any
// record without scanning (4 bytes of memory a record).
type segment struct {
	first uint64
	path  string
	f     *os.File
	pos   []uint32
	// size is the committed length: the end of the last durable frame.
	size int64
}

// count is the number of records the segment holds.
func (s *segment) count() uint64 { return uint64(len(s.pos)) }

// last is the offset of the segment's last record (first-1 when empty).
func (s *segment) last() uint64 { return s.first + s.count() - 1 }

// frameEnd is where frame i ends.
func (s *segment) frameEnd(i int) int64 {
	if i+1 < len(s.pos) {
		return int64(s.pos[i+1])
	}
	return s.size
}

// segName is the file name of the segment whose first record is first:
// zero-padded so that names sort as offsets do.
func segName(first uint64) string { return fmt.Sprintf("%020d%s", first, segSuffix) }

// parseSegName returns the first offset a segment file name carries.
func parseSegName(name string) (uint64, bool) {
	num, ok := strings.CutSuffix(name, segSuffix)
	if !ok || len(num) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil && n > 0
}

// segHeader is the header of a segment starting at first.
func segHeader(first uint64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic)
	binary.LittleEndian.PutUint32(h[4:], segVersion)
	binary.LittleEndian.PutUint64(h[8:], first)
	return h
}

// checkSegHeader reports what is wrong with a segment's header, if anything.
func checkSegHeader(h []byte, first uint64) string {
	switch {
	case len(h) < segHeaderSize:
		return fmt.Sprintf("file is %d bytes, shorter than its header", len(h))
	case string(h[:4]) != segMagic:
		return "not an outbox segment (bad magic)"
	case binary.LittleEndian.Uint32(h[4:]) != segVersion:
		return fmt.Sprintf("segment format version %d, this build reads %d", binary.LittleEndian.Uint32(h[4:]), segVersion)
	case binary.LittleEndian.Uint64(h[8:]) != first:
		return fmt.Sprintf("header says first offset %d, the file name %d", binary.LittleEndian.Uint64(h[8:]), first)
	}
	return ""
}

// frameCRC is the checksum of a frame: it covers the length, the offset and
// the data, so a frame read at the wrong place or for the wrong offset fails.
func frameCRC(hdr, data []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdr[0:4])
	c = crc32.Update(c, castagnoli, hdr[8:16])
	return crc32.Update(c, castagnoli, data)
}

// appendFrame appends the frame of record off to buf.
func appendFrame(buf []byte, off uint64, data []byte) []byte {
	var hdr [frameHeaderSize]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(data)))
	binary.LittleEndian.PutUint64(hdr[8:], off)
	binary.LittleEndian.PutUint32(hdr[4:], frameCRC(hdr[:], data))
	buf = append(buf, hdr[:]...)
	return append(buf, data...)
}

// frameStatus is what parseFrame found at a position.
type frameStatus int

const (
	frameOK         frameStatus = iota
	frameIncomplete             // the header or the data runs past the end
	frameBad                    // complete, but the CRC or the offset is wrong
)

// parseFrame reads the frame at the start of b, which should carry offset
// want. It returns the frame's data and total length when it is intact.
func parseFrame(b []byte, want uint64) (data []byte, n int, st frameStatus) {
	if len(b) < frameHeaderSize {
		return nil, 0, frameIncomplete
	}
	l := int(binary.LittleEndian.Uint32(b[0:]))
	if l > len(b)-frameHeaderSize {
		return nil, 0, frameIncomplete
	}
	data = b[frameHeaderSize : frameHeaderSize+l]
	if binary.LittleEndian.Uint64(b[8:]) != want || binary.LittleEndian.Uint32(b[4:]) != frameCRC(b, data) {
		return nil, 0, frameBad
	}
	return data, frameHeaderSize + l, frameOK
}

// createSegment makes the file of a new, empty segment atomically (written
// under a temporary name, synced, renamed, the directory synced), so a
// segment file never exists without its whole header. sync is the
// outbox's fsync (tests make it fail).
func createSegment(dir string, first uint64, sync func(*os.File) error) (*segment, error) {
	path := filepath.Join(dir, segName(first))
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*segment, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if _, err := f.Write(segHeader(first)); err != nil {
		return fail(err)
	}
	if err := sync(f); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := atomicfile.SyncDir(dir, sync); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &segment{first: first, path: path, f: f, size: segHeaderSize}, nil
}
