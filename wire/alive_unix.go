//go:build unix

package wire

import (
	"errors"
	"net"
	"syscall"
)

// alive reports whether an idle connection can carry a new request: the
// origin has not closed it and has sent nothing unasked. It peeks at the
// socket without blocking or consuming anything.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK):
			ok = true // nothing to read: idle and open
		case rerr != nil, n == 0:
			ok = false // error or EOF
		default:
			ok = false // unsolicited bytes
		}
		return true // done, whatever we saw: never wait
	})
	return err == nil && ok
}
