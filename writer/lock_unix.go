//go:build unix

package writer

import (
	"fmt"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on f for as long as it is
// open, so that another process (a second warcproxy on the same directory)
// cannot write the same file. Files that do not expose a descriptor are left
// unlocked.
func lockFile(f File) error {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("locking warc file: %w", err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return fmt.Errorf("locking warc file: %w", err)
	}
	if lerr != nil {
		return fmt.Errorf("locking warc file: %w", lerr)
	}
	return nil
}
