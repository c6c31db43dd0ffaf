package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a connected unix socket that the runtime's poller watches for
// input only, read and written with raw calls.
//
// Why: the poller registers every socket for output as well, and a unix
// socket signals "writable" each time its peer consumes data. A host that
// writes a record to the daemon is woken again a moment later when the
// daemon reads it, for nothing: measured, 0.44 of a wake-up per record
// paced. A Conn's socket stays out of the poller; an epoll instance of
// its own watches it for input, and that instance is what the poller
// waits on. Writes are non-blocking sends; only when the socket is full
// does a write wait, in poll(2), as an ordinary system call.
type Conn struct {
	sock    *os.File // blocking mode, out of the poller: calls pass MSG_DONTWAIT
	sockRaw syscall.RawConn
	ep      *os.File // the epoll instance watching sock for input, in the poller
	epRaw   syscall.RawConn
	laddr   net.Addr
	raddr   net.Addr
	// wdeadline is the write deadline in Unix nanoseconds (0: none).
	wdeadline atomic.Int64
	closeOnce sync.Once
}

// NewConn returns nc as a Conn if it is a unix socket, else nc itself. It
// must be called before anything reads nc, and nc must not be used after
// it: the Conn takes over its socket (nc is closed).
func NewConn(nc net.Conn) (net.Conn, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return nc, nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	c := &Conn{laddr: uc.LocalAddr(), raddr: uc.RemoteAddr()}
	if err := c.init(fd); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	// The duplicate shares the socket; closing nc takes only its
	// descriptor out of the poller.
	_ = uc.Close()
	return c, nil
}

func (c *Conn) init(fd int) error {
	// Blocking mode keeps os.NewFile from putting the socket in the
	// poller (the mode belongs to the socket, which nc no longer reads).
	if err := unix.SetNonblock(fd, false); err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		_ = unix.Close(epfd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return os.NewSyscallError("fcntl", err)
	}
	c.ep = os.NewFile(uintptr(epfd), "epoll")
	if err := c.ep.SetReadDeadline(time.Time{}); err != nil {
		_ = c.ep.Close() // not in the poller: reads could not wait
		return err
	}
	c.sock = os.NewFile(uintptr(fd), "unix")
	var err1, err2 error
	c.epRaw, err1 = c.ep.SyscallConn()
	c.sockRaw, err2 = c.sock.SyscallConn()
	if err1 != nil || err2 != nil {
		_ = c.ep.Close()
		c.sock = nil // the caller closes fd
		if err1 != nil {
			return err1
		}
		return err2
	}
	return nil
}

// Read reads what the socket holds, waiting through the poller for input
// (and so honouring the read deadline).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.epRaw.Read(func(uintptr) bool {
		if cerr := c.sockRaw.Control(func(fd uintptr) {
			n, errno = recvRaw(fd, p)
		}); cerr != nil {
			errno = syscall.EBADF
		}
		return errno != syscall.EAGAIN
	})
	switch {
	case err != nil:
		if pollError(err) == os.ErrClosed {
			err = net.ErrClosed
		} else {
			err = os.ErrDeadlineExceeded
		}
		return 0, c.opError("read", err)
	case errno == syscall.EBADF:
		return 0, c.opError("read", net.ErrClosed)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("recvfrom", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func recvRaw(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		r1, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			unix.MSG_DONTWAIT, 0, 0)
		if e != syscall.EINTR {
			return int(r1), e
		}
	}
}

// Write sends all of p, waiting in poll(2) while the socket is full.
func (c *Conn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		var n int
		var errno syscall.Errno
		if cerr := c.sockRaw.Control(func(fd uintptr) {
			for {
				r1, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done),
					unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
				if e != syscall.EINTR {
					n, errno = int(r1), e
					return
				}
			}
		}); cerr != nil {
			return done, c.opError("write", net.ErrClosed)
		}
		switch errno {
		case 0:
			done += n
		case syscall.EAGAIN:
			if err := c.waitWritable(); err != nil {
				return done, err
			}
		default:
			return done, c.opError("write", os.NewSyscallError("sendto", errno))
		}
	}
	return done, nil
}

// waitWritable waits until the socket has room, the write deadline
// passes, or the Conn is closed (Close shuts the socket down, which ends
// the poll).
func (c *Conn) waitWritable() error {
	timeout := -1
	if d := c.wdeadline.Load(); d != 0 {
		left := time.Until(time.Unix(0, d))
		if left <= 0 {
			return c.opError("write", os.ErrDeadlineExceeded)
		}
		timeout = int((left + time.Millisecond - 1) / time.Millisecond)
	}
	var perr error
	if err := c.sockRaw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		for {
			if _, perr = unix.Poll(fds, timeout); perr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return c.opError("write", net.ErrClosed)
	}
	if perr != nil {
		return c.opError("write", os.NewSyscallError("poll", perr))
	}
	return nil
}

// Close shuts the socket down, which ends a read or write waiting on it,
// and closes it.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		_ = c.sockRaw.Control(func(fd uintptr) { _, _, _ = syscall.RawSyscall(syscall.SYS_SHUTDOWN, fd, unix.SHUT_RDWR, 0) })
		_ = c.ep.Close()
		err = c.sock.Close()
	})
	if err != nil {
		return c.opError("close", err)
	}
	return nil
}

// LocalAddr is the socket's own address.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets both deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline sets the deadline of reads, which wait in the poller.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if err := c.ep.SetReadDeadline(t); err != nil {
		return c.opError("set deadline", net.ErrClosed)
	}
	return nil
}

// SetWriteDeadline sets the deadline of writes. It costs no system call:
// only a write that finds the socket full reads it.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	var d int64
	if !t.IsZero() {
		d = t.UnixNano()
	}
	c.wdeadline.Store(d)
	return nil
}

// opError wraps err as net's own connections do, so callers see the same
// errors: a net.Error whose Timeout() is true for a passed deadline,
// net.ErrClosed for a closed Conn.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "unix", Source: c.laddr, Addr: c.raddr, Err: err}
}
