//go:build unix

package wacz

import (
	"errors"
	"os"
	"syscall"
)

// lockedByWriter reports whether a warcproxy writer holds f's lock: it
// keeps an exclusive flock on every WARC file while it writes it, also
// under its final name (--no-warc-open-suffix). A shared lock taken here
// is released when f is closed.
func lockedByWriter(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_SH|syscall.LOCK_NB)
	}); err != nil {
		return false
	}
	return errors.Is(lerr, syscall.EWOULDBLOCK)
}
