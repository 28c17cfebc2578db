// Package spool holds the bytes of captures between the proxy, which fills
// them while it streams a response to the client, and the WARC writer, which
// reads them back. Each Buffer keeps up to a per-buffer limit in memory and
// spills the rest to an unlinked temporary file; a Spooler-wide budget caps
// the memory all buffers hold together, so RSS stays flat whatever the
// concurrency or body sizes.
package spool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// Spooler makes Buffers that share one memory budget and one temp directory.
type Spooler struct {
	dir       string
	maxMem    int64 // per buffer
	budget    int64 // all buffers together
	memUsed   atomic.Int64
	diskUsed  atomic.Int64
	spills    atomic.Int64
	firstSize int64
	pool      sync.Pool
}

// New returns a Spooler. maxMemPerBuffer is --tmp-file-max-memory, budget is
// --spool-memory; dir is where spill files go ("" = os.TempDir()).
func New(dir string, maxMemPerBuffer, budget int64) (*Spooler, error) {
	if maxMemPerBuffer < 0 || budget < 0 {
		return nil, errors.New("spool: negative memory limit")
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating spool dir: %w", err)
		}
	}
	first := int64(16 << 10)
	if maxMemPerBuffer < first {
		first = maxMemPerBuffer
	}
	s := &Spooler{dir: dir, maxMem: maxMemPerBuffer, budget: budget, firstSize: first}
	s.pool.New = func() any { b := make([]byte, 0, first); return &b }
	return s, nil
}

// MemoryInUse is the number of bytes of memory reserved by open buffers.
func (s *Spooler) MemoryInUse() int64 { return s.memUsed.Load() }

// MemoryBudget is the configured budget.
func (s *Spooler) MemoryBudget() int64 { return s.budget }

// DiskInUse is the number of bytes currently held in spill files.
func (s *Spooler) DiskInUse() int64 { return s.diskUsed.Load() }

// Spills counts buffers that went to disk.
func (s *Spooler) Spills() int64 { return s.spills.Load() }

func (s *Spooler) reserve(n int64) bool {
	for {
		used := s.memUsed.Load()
		if used+n > s.budget {
			return false
		}
		if s.memUsed.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Buffer is an append-only byte store: memory first, then a spill file.
// Writes come from one goroutine; reads (ReadAt) may happen after the writes
// are done, from any goroutine, any number of times. Close releases it.
type Buffer struct {
	s        *Spooler
	mem      []byte
	pooled   *[]byte
	reserved int64
	file     *os.File
	size     int64
	memLen   int64 // bytes held in mem; the file holds [memLen, size)
	err      error
	closed   bool
}

// NewBuffer returns an empty buffer.
func (s *Spooler) NewBuffer() *Buffer { return &Buffer{s: s} }

// Len is the number of bytes written.
func (b *Buffer) Len() int64 { return b.size }

// OnDisk reports whether the buffer spilled to a file.
func (b *Buffer) OnDisk() bool { return b.file != nil }

// Write appends p. Once a write fails the buffer keeps failing.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.closed {
		return 0, errors.New("spool: write to closed buffer")
	}
	if b.file == nil && b.growMem(int64(len(p))) {
		b.mem = append(b.mem, p...)
		b.size += int64(len(p))
		b.memLen = b.size
		return len(p), nil
	}
	if b.file == nil {
		f, err := os.CreateTemp(b.s.dir, "warcproxy-spool-*")
		if err != nil {
			b.err = fmt.Errorf("creating spool file: %w", err)
			return 0, b.err
		}
		// Unlinked at once: nothing is left behind if the process dies.
		_ = os.Remove(f.Name())
		b.file = f
		b.s.spills.Add(1)
	}
	n, err := b.file.Write(p)
	b.size += int64(n)
	b.s.diskUsed.Add(int64(n))
	if err != nil {
		b.err = fmt.Errorf("writing spool file: %w", err)
		return n, b.err
	}
	return n, nil
}

// growMem makes room for n more bytes in memory if the per-buffer limit and
// the shared budget allow it.
func (b *Buffer) growMem(n int64) bool {
	need := int64(len(b.mem)) + n
	if need > b.s.maxMem {
		return false
	}
	if need <= int64(cap(b.mem)) {
		return true
	}
	if b.mem == nil && need <= b.s.firstSize {
		if !b.s.reserve(b.s.firstSize) {
			return false
		}
		b.reserved = b.s.firstSize
		b.pooled = b.s.pool.Get().(*[]byte)
		b.mem = (*b.pooled)[:0]
		return true
	}
	newCap := max(2*int64(cap(b.mem)), need, b.s.firstSize)
	newCap = min(newCap, b.s.maxMem)
	if !b.s.reserve(newCap - b.reserved) {
		return false
	}
	grown := make([]byte, len(b.mem), newCap)
	copy(grown, b.mem)
	b.releasePooled()
	b.mem = grown
	b.reserved = newCap
	return true
}

func (b *Buffer) releasePooled() {
	if b.pooled != nil {
		*b.pooled = (*b.pooled)[:0]
		b.s.pool.Put(b.pooled)
		b.pooled = nil
	}
}

// ReadAt implements io.ReaderAt over everything written so far.
func (b *Buffer) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("spool: negative offset")
	}
	if off >= b.size {
		return 0, io.EOF
	}
	n := 0
	if off < b.memLen {
		n = copy(p, b.mem[off:b.memLen])
		off += int64(n)
		if n == len(p) {
			return n, nil
		}
	}
	if b.file == nil {
		return n, io.EOF
	}
	want := min(int64(len(p)-n), b.size-off)
	m, err := b.file.ReadAt(p[n:n+int(want)], off-b.memLen)
	n += m
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// Close releases memory and removes the spill file. It is safe to call twice.
func (b *Buffer) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.releasePooled()
	b.mem = nil
	if b.reserved > 0 {
		b.s.memUsed.Add(-b.reserved)
		b.reserved = 0
	}
	if b.file != nil {
		b.s.diskUsed.Add(-(b.size - b.memLen))
		err := b.file.Close()
		b.file = nil
		return err
	}
	return nil
}
