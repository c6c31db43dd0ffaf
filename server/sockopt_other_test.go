//go:build !unix

package server_test

import "syscall"

// smallReceiveBuffer leaves the socket alone where SO_RCVBUF cannot be set
// portably; the stalled-subscriber test then needs more data to stall.
func smallReceiveBuffer(_, _ string, _ syscall.RawConn) error { return nil }
