//go:build unix

package upload

import (
	"errors"
	"os"
	"syscall"
)

// errBusy: another holder has the file's lock, a writer still writing it
// (under its final name with --no-warc-open-suffix, or a second process on
// the same --dir) or another uploader shipping it.
var errBusy = errors.New("locked by a writer or another uploader")

// lock takes the exclusive, non-blocking flock that warcproxy's writers
// hold on a file while they write it, and holds it while the file is
// shipped; closing f releases it.
func lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if errors.Is(lerr, syscall.EWOULDBLOCK) {
		return errBusy
	}
	return lerr
}
