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
	"sync/atomic"
)

// Memory is held in chunks kept for reuse, so that no capture copies its
// bytes while it grows and none allocates once the free lists are warm: a
// small first chunk (most request records and small responses fit in it),
// then large ones.
const (
	smallChunk = 4 << 10
	largeChunk = 32 << 10
	// keptShare: closed buffers' chunks are kept for reuse up to this
	// fraction of the budget. Keeping all of it made an idle or lightly
	// loaded proxy hold the whole budget for good (the soak's mean RSS went
	// from 52 to 90 MB); a quarter serves the steady turnover, and a burst
	// beyond it is given back to the collector.
	keptShare = 4
)

// Spooler makes Buffers that share one memory budget and one temp directory.
type Spooler struct {
	dir      string
	maxMem   int64 // per buffer
	budget   int64 // all buffers together
	memUsed  atomic.Int64
	diskUsed atomic.Int64
	spills   atomic.Int64
	free     freeChunks
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
	return &Spooler{dir: dir, maxMem: maxMemPerBuffer, budget: budget}, nil
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
	chunks   []*[]byte // chunks[0] is small, the rest large
	reserved int64
	file     *os.File
	size     int64
	memLen   int64 // bytes held in memory; the file holds [memLen, size)
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
	if b.file == nil && b.roomInMemory(int64(len(p))) {
		total := len(p)
		for len(p) > 0 {
			n := copy(b.chunkAt(b.memLen), p)
			p = p[n:]
			b.memLen += int64(n)
		}
		b.size = b.memLen
		return total, nil
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

// chunkLayout returns the index of the chunk holding offset off and the
// offset within it.
func chunkLayout(off int64) (int, int64) {
	if off < smallChunk {
		return 0, off
	}
	off -= smallChunk
	return 1 + int(off/largeChunk), off % largeChunk
}

// capacity is the memory capacity of the first n chunks.
func capacity(n int) int64 {
	if n == 0 {
		return 0
	}
	return smallChunk + int64(n-1)*largeChunk
}

// chunkAt returns the writable rest of the chunk holding offset off; the
// chunk exists (roomInMemory made it).
func (b *Buffer) chunkAt(off int64) []byte {
	i, within := chunkLayout(off)
	return (*b.chunks[i])[within:]
}

// roomInMemory takes chunks for n more bytes if the per-buffer limit and
// the shared budget allow it.
func (b *Buffer) roomInMemory(n int64) bool {
	need := b.memLen + n
	if need > b.s.maxMem {
		return false
	}
	have := capacity(len(b.chunks))
	if need <= have {
		return true
	}
	var more int64
	k := len(b.chunks)
	for capacity(k) < need {
		if k == 0 {
			more += smallChunk
		} else {
			more += largeChunk
		}
		k++
	}
	if !b.s.reserve(more) {
		return false
	}
	b.reserved += more
	for len(b.chunks) < k {
		size := largeChunk
		if len(b.chunks) == 0 {
			size = smallChunk
		}
		b.chunks = append(b.chunks, b.s.free.get(size))
	}
	return true
}

// ReadAt implements io.ReaderAt over everything written so far.
func (b *Buffer) ReadAt(p []byte, off int64) (int, error) {
	if b.closed {
		// Its chunks may already hold another buffer's bytes.
		return 0, errors.New("spool: read from closed buffer")
	}
	if off < 0 {
		return 0, errors.New("spool: negative offset")
	}
	if off >= b.size {
		return 0, io.EOF
	}
	n := 0
	for off < b.memLen && n < len(p) {
		i, within := chunkLayout(off)
		c := *b.chunks[i]
		end := int64(len(c))
		if last := b.memLen - (off - within); last < end {
			end = last
		}
		m := copy(p[n:], c[within:end])
		n += m
		off += int64(m)
	}
	if n == len(p) {
		return n, nil
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
	if b.reserved > 0 {
		b.s.memUsed.Add(-b.reserved)
		b.reserved = 0
	}
	for _, c := range b.chunks {
		b.s.free.put(c, min(b.s.budget-b.s.memUsed.Load(), b.s.budget/keptShare))
	}
	b.chunks = nil
	if b.file != nil {
		b.s.diskUsed.Add(-(b.size - b.memLen))
		err := b.file.Close()
		b.file = nil
		return err
	}
	return nil
}
