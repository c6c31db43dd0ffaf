package rawio_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/internal/rawio"
)

func TestNewReaderChoosesRawOnlyForPollable(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	regular, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { regular.Close() })
	cases := []struct {
		name string
		r    io.Reader
		raw  bool
	}{
		{"pipe", pr, true},
		{"regular file (blocking)", regular, false},
		{"no descriptor", bytes.NewReader(nil), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, raw := rawio.NewReader(c.r).(*rawio.Reader)
			if raw != c.raw {
				t.Fatalf("raw reader: got %v, want %v", raw, c.raw)
			}
		})
	}
}

func TestReaderPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := rawio.NewReader(pr)
	want := strings.Repeat("line of an agent\n", 10000) // more than a pipe holds: the reader must wait
	go func() {
		_, _ = pw.WriteString(want)
		// A pause before the end: the reader waits through the poller.
		time.Sleep(20 * time.Millisecond)
		_, _ = pw.WriteString("last")
		pw.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if string(got) != want+"last" {
		t.Fatalf("got %d bytes, want %d", len(got), len(want)+4)
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the end: got %d, %v, want 0, EOF", n, err)
	}
}

func TestReaderUnblocksOnClose(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r := rawio.NewReader(pr)
	errc := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 16))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it wait in the poller
	pr.Close()
	if err := <-errc; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed pipe: got %v, want os.ErrClosed", err)
	}
}

// socketPair is a connected unix socket pair from net, so both ends are
// in the runtime's poller.
func socketPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	a, err = net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-accepted
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestWriterSocket(t *testing.T) {
	a, b := socketPair(t)
	w := rawio.NewWriter(a)
	if _, raw := w.(*rawio.Writer); !raw {
		t.Fatalf("writer of a unix socket: got %T, want *rawio.Writer", w)
	}
	want := bytes.Repeat([]byte("frame "), 200000) // far more than the socket buffers
	done := make(chan error, 1)
	go func() {
		n, err := w.Write(want)
		if err == nil && n != len(want) {
			err = errors.New("short write")
		}
		a.Close()
		done <- err
	}()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if werr := <-done; werr != nil {
		t.Fatalf("Write: %v", werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d", len(got), len(want))
	}
}

func TestWriterHonoursDeadline(t *testing.T) {
	a, _ := socketPair(t) // the peer never reads
	w := rawio.NewWriter(a)
	if err := a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, err := w.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a peer that never reads: got %d bytes, %v, want os.ErrDeadlineExceeded", n, err)
	}
	if n >= 64<<20 {
		t.Fatalf("written before the deadline: got all %d bytes, want fewer", n)
	}
}

func TestWriteAt(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	big := bytes.Repeat([]byte{'b'}, rawio.MaxRawWrite+1)
	cases := []struct {
		name string
		b    []byte
		off  int64
	}{
		{"small", []byte("record one\n"), 0},
		{"after it", []byte("record two\n"), 11},
		{"over the raw limit", big, 22},
		{"empty", nil, 5},
	}
	want := make([]byte, 0, 22+len(big))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := rawio.WriteAt(f, c.b, c.off)
			if err != nil || n != len(c.b) {
				t.Fatalf("WriteAt: got %d, %v, want %d, nil", n, err, len(c.b))
			}
		})
		if len(c.b) > 0 {
			want = append(want[:c.off], c.b...)
		}
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file: got %d bytes, want %d", len(got), len(want))
	}
	f.Close()
	if _, err := rawio.WriteAt(f, []byte("x"), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("WriteAt on a closed file: got %v, want os.ErrClosed", err)
	}
}

func TestNetErrorsKeepTheirType(t *testing.T) {
	a, _ := socketPair(t)
	r := rawio.NewReader(a)
	if err := a.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := r.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("raw read of a socket past its deadline: got %v, want a net.Error that timed out", err)
	}
	a.Close()
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("raw read of a closed socket: got %v, want net.ErrClosed", err)
	}
	if _, err := rawio.NewWriter(a).Write([]byte("x")); err == nil {
		t.Fatal("raw write of a closed socket: got no error")
	}
}
