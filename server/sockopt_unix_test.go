//go:build unix

package server_test

import "syscall"

// smallReceiveBuffer is a net.Dialer Control that shrinks the socket's
// receive buffer (and so its TCP window), so that a client that stops
// reading stalls the server after a few kilobytes.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	})
	if err != nil {
		return err
	}
	return serr
}
