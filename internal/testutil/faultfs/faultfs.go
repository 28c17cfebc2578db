// Package faultfs is a writer.FS over the operating system's files whose
// faults a test switches on and off while the pool runs: ENOSPC, EIO or any
// other error from WriteAt (optionally after writing part of the bytes, as a
// disk that fills up in the middle of a write), OpenFile, Sync, Rename and
// Truncate; or a stall, a disk that stops answering (Stall).
//
// A test typically lets the proxy write for a while, calls Fail to make
// every write fail, watches the pool retry (write errors in /status and
// /metrics, captures piling up in the queue), then calls Heal and checks
// that every capture was written once. Files really are written, so the
// result can be checked with warccheck.
//
// For a real full disk, Tmpfs mounts a small tmpfs (root on Linux only;
// the test is skipped elsewhere) and Fill fills it up.
package faultfs

import (
	"io/fs"
	"os"
	"sync"

	"github.com/warcproxy/warcproxy/writer"
)

// Op names a file operation that can be made to fail.
type Op string

// The operations faults can be set on.
const (
	Open     Op = "open"     // FS.OpenFile (creating a WARC file)
	Write    Op = "write"    // File.WriteAt
	Sync     Op = "sync"     // File.Sync (before a file is closed)
	Rename   Op = "rename"   // FS.Rename (dropping ".open")
	Truncate Op = "truncate" // File.Truncate (cutting back after a failed write)
)

// Fault describes how calls of one Op fail.
type Fault struct {
	// Err is the error the call fails with, wrapped as the os package
	// does (*fs.PathError or *os.LinkError), so errors.Is(err,
	// syscall.ENOSPC) holds. Required.
	Err error
	// Skip lets this many calls succeed before the fault begins.
	Skip int
	// Count is how many calls fail; 0 means every call until Clear or
	// Heal.
	Count int
	// Partial makes the first failing WriteAt write half of its bytes
	// (plus one: a buffer of two equal records is not cut exactly between
	// them) before it fails, as on a disk that fills up during the write; later
	// failing calls write nothing. Only for Write.
	Partial bool
	// Unreported makes that partial write report 0 bytes written, as
	// os.File.WriteAt does on a real disk that fills up during a write:
	// a first pwrite(2) writes part, the next fails with ENOSPC, and
	// WriteAt drops the count of the first. A writer must not trust the
	// count of a failed write.
	Unreported bool
}

// FS is a writer.FS over the operating system's files with switchable
// faults. Its methods are safe for concurrent use. The zero value is not
// usable: call New.
type FS struct {
	writer.OSFS // MkdirAll, Stat and Remove never fail

	mu       sync.Mutex
	faults   map[Op]*state
	calls    map[Op]int
	failures map[Op]int
	stalled  chan struct{} // while not nil, writes wait for it to close
}

// state is a Fault in progress.
type state struct {
	Fault
	partialDone bool
}

var (
	_ writer.FS   = (*FS)(nil)
	_ writer.File = (*File)(nil)
)

// New returns an FS without faults.
func New() *FS {
	return &FS{faults: make(map[Op]*state), calls: make(map[Op]int), failures: make(map[Op]int)}
}

// Set makes calls of op fail as f says, replacing any fault op had. It
// panics if f.Err is nil.
func (f *FS) Set(op Op, ft Fault) {
	if ft.Err == nil {
		panic("faultfs: Fault.Err is nil")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = &state{Fault: ft}
}

// Fail makes every call of the given ops fail with err until Clear or
// Heal. A failing WriteAt writes nothing.
func (f *FS) Fail(err error, ops ...Op) {
	for _, op := range ops {
		f.Set(op, Fault{Err: err})
	}
}

// Clear removes the faults of the given ops.
func (f *FS) Clear(ops ...Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range ops {
		delete(f.faults, op)
	}
}

// Heal removes every fault and ends a stall: from now on every call goes
// through.
func (f *FS) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
	if f.stalled != nil {
		close(f.stalled)
		f.stalled = nil
	}
}

// Stall makes every WriteAt wait, without an error, until Heal: a disk
// that stops answering (a hung NFS server, a dying drive), not one that
// fails.
func (f *FS) Stall() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stalled == nil {
		f.stalled = make(chan struct{})
	}
}

// waitStall waits while writes are stalled.
func (f *FS) waitStall() {
	f.mu.Lock()
	ch := f.stalled
	f.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// Calls reports how many times op has been called, failed or not.
func (f *FS) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// Failures reports how many calls of op failed because of a fault.
func (f *FS) Failures(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures[op]
}

// check counts a call of op and decides whether it fails: it returns, for
// a failing write, the fault when part of the bytes should be written
// first, and the error (nil to go through).
func (f *FS) check(op Op) (partial *Fault, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	s := f.faults[op]
	switch {
	case s == nil:
		return nil, nil
	case s.Skip > 0:
		s.Skip--
		return nil, nil
	}
	if s.Count > 0 {
		s.Count--
		if s.Count == 0 {
			delete(f.faults, op)
		}
	}
	f.failures[op]++
	if s.Partial && !s.partialDone {
		s.partialDone = true
		ft := s.Fault
		return &ft, s.Err
	}
	return nil, s.Err
}

// OpenFile opens the file with os.OpenFile unless an Open fault says
// otherwise.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (writer.File, error) {
	if _, err := f.check(Open); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// Rename calls os.Rename unless a Rename fault says otherwise.
func (f *FS) Rename(oldpath, newpath string) error {
	if _, err := f.check(Rename); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return os.Rename(oldpath, newpath)
}

// File is a file opened by FS. It embeds *os.File, so the pool can still
// flock it (it implements syscall.Conn).
type File struct {
	*os.File
	fs *FS
}

// WriteAt writes p unless a Write fault says otherwise; a partial fault
// writes half of p first and reports how much it wrote, or 0 if
// Unreported.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	f.fs.waitStall()
	partial, err := f.fs.check(Write)
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	n := 0
	if partial != nil && len(p) > 0 {
		n, _ = f.File.WriteAt(p[:len(p)/2+1], off)
		if partial.Unreported {
			n = 0
		}
	}
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
}

// Sync calls os.File.Sync unless a Sync fault says otherwise.
func (f *File) Sync() error {
	if _, err := f.fs.check(Sync); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

// Truncate calls os.File.Truncate unless a Truncate fault says otherwise.
func (f *File) Truncate(size int64) error {
	if _, err := f.fs.check(Truncate); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return f.File.Truncate(size)
}
