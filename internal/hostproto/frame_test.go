package hostproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tether/tether/internal/errcode"
)

// frameOf is a frame announcing size bytes followed by body (which may be
// shorter: a truncated frame).
func frameOf(size uint32, body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, size)
	return append(b, body...)
}

func TestReadFrame(t *testing.T) {
	cases := []struct {
		name     string
		in       []byte
		max      int
		want     string
		wantCode errcode.Code // "" for success
		wantEOF  bool         // io.EOF itself: the peer closed between frames
		wantText string
	}{
		{name: "whole frame", in: frameOf(4, "abcd"), max: 8, want: "abcd"},
		{name: "empty body", in: frameOf(0, ""), max: 8, want: ""},
		{name: "exactly the limit", in: frameOf(8, "12345678"), max: 8, want: "12345678"},
		{name: "nothing at all", in: nil, max: 8, wantEOF: true},
		{name: "past the limit", in: frameOf(9, "123456789"), max: 8, wantCode: errcode.HostFrameTooLarge, wantText: "frame of 9 bytes, past the limit of 8"},
		{name: "huge length", in: frameOf(0xffffffff, ""), max: DefaultMaxFrame, wantCode: errcode.HostFrameTooLarge, wantText: "4294967295 bytes"},
		{name: "cut in the header", in: []byte{0, 0}, max: 8, wantCode: errcode.HostProtocolError, wantText: "inside a frame header (2 of 4 bytes)"},
		{name: "cut in the body", in: frameOf(6, "abc"), max: 8, wantCode: errcode.HostProtocolError, wantText: "inside a frame (3 of 6 bytes)"},
		{name: "cut right after the header", in: frameOf(6, ""), max: 8, wantCode: errcode.HostProtocolError, wantText: "inside a frame (0 of 6 bytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.in), tc.max)
			switch {
			case tc.wantEOF:
				if err != io.EOF {
					t.Fatalf("got %q, %v; want io.EOF", got, err)
				}
			case tc.wantCode != "":
				if !errcode.Is(err, tc.wantCode) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("got %q, %v; want %s mentioning %q", got, err, tc.wantCode, tc.wantText)
				}
				if tc.wantCode == errcode.HostProtocolError && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("truncation %v: want it to wrap io.ErrUnexpectedEOF", err)
				}
			default:
				if err != nil || string(got) != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
			}
		})
	}
}

func TestAppendFrame(t *testing.T) {
	got, err := appendFrame([]byte("x"), []byte("hello"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("x"), frameOf(5, "hello")...); !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	got, err = appendFrame([]byte("x"), []byte("hello!"), 5)
	if !errcode.Is(err, errcode.HostFrameTooLarge) {
		t.Fatalf("6 bytes over a limit of 5: got %v, want %s", err, errcode.HostFrameTooLarge)
	}
	if string(got) != "x" {
		t.Fatalf("a refused frame left %q, want the buffer as it was", got)
	}
}
