// Package rawio reads and writes descriptors with raw system calls, which
// skip the Go runtime's system-call bookkeeping (entersyscall and
// exitsyscall).
//
// Why: in a process that is idle between short bursts of work, such as an
// executor host relaying one agent line every few milliseconds, the first
// ordinary system call after the idle period wakes the runtime's sysmon
// thread from its deep sleep; sysmon then polls every 20 µs until the
// process is idle again and sleeps once more. Measured on a 2-core VM
// with one paced session, that is 3.5 of the host's 4.7 context switches
// per agent line, and about half its CPU (docs/benchmarks.md). A raw call
// leaves sysmon asleep.
//
// The price: the runtime does not know the thread is in the kernel, so
// it cannot hand the P to another thread while the call lasts. Only calls
// that cannot block are made raw: reads and writes of non-blocking
// descriptors registered with the runtime's poller (waiting for them goes
// through the poller as usual), and positioned writes of at most
// MaxRawWrite bytes to regular files, which land in the page cache.
package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// MaxRawWrite is the largest positioned file write WriteAt makes raw;
// larger ones go through os.File.WriteAt, which the runtime accounts.
const MaxRawWrite = 64 << 10

// Reader reads a non-blocking, pollable descriptor (a pipe or socket from
// os or net) with raw read(2) calls, waiting for data through the poller.
type Reader struct {
	rc   syscall.RawConn
	errs errStyle
}

// NewReader returns a Reader for r if r is a pollable, non-blocking
// descriptor, else r itself.
func NewReader(r io.Reader) io.Reader {
	rc, ok := rawConn(r)
	if !ok {
		return r
	}
	return &Reader{rc: rc, errs: styleOf(r)}
}

// Read reads up to len(p) bytes; io.EOF at the end of the stream.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r1, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			if e == syscall.EINTR {
				continue
			}
			n, errno = int(r1), e
			return e != syscall.EAGAIN
		}
	})
	switch {
	case err != nil:
		return 0, r.errs.wrap("read", pollError(err))
	case errno != 0:
		return 0, r.errs.wrap("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Writer writes a non-blocking, pollable descriptor with raw write(2)
// calls, waiting for room through the poller (and so honouring the
// descriptor's write deadline).
type Writer struct {
	rc   syscall.RawConn
	errs errStyle
}

// NewWriter returns a Writer for w if w is a pollable, non-blocking
// descriptor, else w itself.
func NewWriter(w io.Writer) io.Writer {
	rc, ok := rawConn(w)
	if !ok {
		return w
	}
	return &Writer{rc: rc, errs: styleOf(w)}
}

// Write writes all of p or returns the error that stopped it.
func (w *Writer) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	for done < len(p) {
		err := w.rc.Write(func(fd uintptr) bool {
			for {
				r1, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
				if e == syscall.EINTR {
					continue
				}
				if e == 0 {
					done += int(r1)
				}
				errno = e
				return e != syscall.EAGAIN
			}
		})
		if err != nil {
			return done, w.errs.wrap("write", pollError(err))
		}
		if errno != 0 {
			return done, w.errs.wrap("write", os.NewSyscallError("write", errno))
		}
	}
	return done, nil
}

// WriteAt writes all of b to f at off, raw when b is at most MaxRawWrite
// bytes.
func WriteAt(f *os.File, b []byte, off int64) (int, error) {
	if len(b) == 0 || len(b) > MaxRawWrite {
		return f.WriteAt(b, off)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f.WriteAt(b, off)
	}
	done := 0
	var errno syscall.Errno
	cerr := rc.Control(func(fd uintptr) {
		for done < len(b) {
			r1, _, e := syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done),
				uintptr(off+int64(done)), 0, 0)
			if e == syscall.EINTR {
				continue
			}
			if e != 0 {
				errno = e
				return
			}
			if r1 == 0 {
				errno = syscall.EIO // no progress: never loop forever
				return
			}
			done += int(r1)
		}
	})
	switch {
	case cerr != nil:
		return done, &os.PathError{Op: "write", Path: f.Name(), Err: os.ErrClosed} // Control fails only on a closed file
	case errno != 0:
		return done, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
	return done, nil
}

// rawConn returns x's raw descriptor if it is a non-blocking one, which
// the runtime's poller serves.
func rawConn(x any) (syscall.RawConn, bool) {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	}); err != nil {
		return nil, false
	}
	return rc, nonblock
}

// pollError names what a RawConn's Read or Write failed on. They fail
// only when the descriptor's deadline passed or it was closed (a
// descriptor that is not in the poller never gets here), but with the
// poller's own unexported errors: this maps them to os.ErrDeadlineExceeded
// and os.ErrClosed, which callers can test for.
func pollError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return os.ErrDeadlineExceeded
	}
	return os.ErrClosed
}

// errStyle wraps errors the way the wrapped descriptor's own type does,
// so callers that test them (os.IsTimeout, a net.Error's Timeout,
// errors.Is with os.ErrClosed or net.ErrClosed) see no difference.
type errStyle struct {
	conn         bool // a net.Conn: *net.OpError, net.ErrClosed
	name         string
	laddr, raddr net.Addr
}

func styleOf(x any) errStyle {
	if c, ok := x.(net.Conn); ok {
		return errStyle{conn: true, name: c.LocalAddr().Network(), laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	}
	if f, ok := x.(*os.File); ok {
		return errStyle{name: f.Name()}
	}
	return errStyle{name: "rawio"}
}

func (s errStyle) wrap(op string, err error) error {
	if !s.conn {
		return &os.PathError{Op: op, Path: s.name, Err: err}
	}
	if err == os.ErrClosed {
		err = net.ErrClosed
	}
	return &net.OpError{Op: op, Net: s.name, Source: s.laddr, Addr: s.raddr, Err: err}
}
