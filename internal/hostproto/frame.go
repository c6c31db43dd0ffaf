package hostproto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tether/tether/internal/errcode"
)

// Frame size bounds.
const (
	// DefaultMaxFrame bounds a frame's body unless a Config says
	// otherwise: room for a large tool output or a long prompt, while a
	// corrupted or hostile length cannot make a peer allocate gigabytes.
	DefaultMaxFrame = 16 << 20
	// frameHeader is the 4-byte big-endian body length before each body.
	frameHeader = 4
)

// appendFrame appends body as one frame, its length first, to buf; a
// frame is written with one Write, so it is never interleaved with
// another writer's.
func appendFrame(buf, body []byte, maxFrame int) ([]byte, error) {
	if len(body) > maxFrame {
		return buf, errcode.New(errcode.HostFrameTooLarge, "frame of %d bytes exceeds the limit of %d bytes", len(body), maxFrame)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
	return append(buf, body...), nil
}

// readFrame reads one frame's body. A clean end of stream before a frame
// starts is io.EOF (the peer closed); an end inside a frame fails with
// errcode.HostProtocolError, and a length past maxFrame with
// errcode.HostFrameTooLarge without reading the body. After either the
// stream is out of step and must be closed.
func readFrame(r io.Reader, maxFrame int) ([]byte, error) {
	var hdr [frameHeader]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, frameHeaderError(err, n)
	}
	size, err := frameSize(hdr[:], maxFrame)
	if err != nil {
		return nil, err
	}
	body := make([]byte, size)
	if n, err := io.ReadFull(r, body); err != nil {
		return nil, frameBodyError(err, n, size)
	}
	return body, nil
}

// peekFrameSize reads the next frame's length from r without consuming
// it, failing as readFrame does.
func peekFrameSize(r *bufio.Reader, maxFrame int) (int, error) {
	hdr, err := r.Peek(frameHeader)
	if err != nil {
		return 0, frameHeaderError(err, len(hdr))
	}
	return frameSize(hdr, maxFrame)
}

// frameSize decodes a frame header, refusing a length past maxFrame.
func frameSize(hdr []byte, maxFrame int) (int, error) {
	size := binary.BigEndian.Uint32(hdr)
	if uint64(size) > uint64(maxFrame) {
		return 0, errcode.New(errcode.HostFrameTooLarge, "peer announced a frame of %d bytes, past the limit of %d bytes", size, maxFrame)
	}
	return int(size), nil
}

// frameHeaderError is the error of a read that got n bytes of a header.
func frameHeaderError(err error, n int) error {
	if n > 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return errcode.Wrap(errcode.HostProtocolError, io.ErrUnexpectedEOF, "connection ended inside a frame header (%d of %d bytes)", n, frameHeader)
	}
	return err
}

// frameBodyError is the error of a read that got n of a body's size bytes.
func frameBodyError(err error, n, size int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errcode.Wrap(errcode.HostProtocolError, io.ErrUnexpectedEOF, "connection ended inside a frame (%d of %d bytes)", max(n, 0), size)
	}
	return fmt.Errorf("hostproto: read frame body: %w", err)
}
