package spool

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, b *Buffer) []byte {
	t.Helper()
	got, err := io.ReadAll(io.NewSectionReader(b, 0, b.Len()))
	require.NoError(t, err)
	return got
}

func TestBufferMemoryThenDisk(t *testing.T) {
	s, err := New(t.TempDir(), 64<<10, 1<<20)
	require.NoError(t, err)
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)

	b := s.NewBuffer()
	for p := data; len(p) > 0; {
		n := min(len(p), 7000)
		_, err := b.Write(p[:n])
		require.NoError(t, err)
		p = p[n:]
	}
	require.True(t, b.OnDisk(), "over the per-buffer limit spills")
	require.Equal(t, int64(len(data)), b.Len())
	require.Equal(t, data, readAll(t, b))
	// Memory is taken in chunks: at most one chunk past the limit is held.
	require.LessOrEqual(t, s.MemoryInUse(), int64(64<<10+largeChunk))
	require.Greater(t, s.DiskInUse(), int64(0))
	// Reads at any offset, spanning memory and file.
	p := make([]byte, 10000)
	n, err := b.ReadAt(p, 60<<10)
	require.NoError(t, err)
	require.Equal(t, data[60<<10:60<<10+n], p[:n])
	require.NoError(t, b.Close())
	require.Equal(t, int64(0), s.MemoryInUse())
	require.Equal(t, int64(0), s.DiskInUse())
}

func TestBudgetSpent(t *testing.T) {
	s, err := New(t.TempDir(), 32<<10, 48<<10)
	require.NoError(t, err)
	small := bytes.Repeat([]byte("x"), 20<<10)
	a, b, c := s.NewBuffer(), s.NewBuffer(), s.NewBuffer()
	for _, buf := range []*Buffer{a, b, c} {
		_, err := buf.Write(small)
		require.NoError(t, err)
		require.Equal(t, small, readAll(t, buf))
	}
	require.False(t, a.OnDisk())
	require.True(t, c.OnDisk(), "budget spent: a new buffer spills from its first byte")
	require.LessOrEqual(t, s.MemoryInUse(), int64(48<<10))
	a.Close()
	d := s.NewBuffer()
	_, _ = d.Write(small)
	require.False(t, d.OnDisk(), "released memory is reused")
	for _, buf := range []*Buffer{b, c, d} {
		buf.Close()
	}
	require.Equal(t, int64(0), s.MemoryInUse())
}

func TestZeroMemory(t *testing.T) {
	s, err := New(t.TempDir(), 0, 0)
	require.NoError(t, err)
	b := s.NewBuffer()
	_, err = b.Write([]byte("hello"))
	require.NoError(t, err)
	require.True(t, b.OnDisk())
	require.Equal(t, "hello", string(readAll(t, b)))
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "closing twice is fine")
}

// FuzzBuffer writes random pieces and reads back random ranges.
func FuzzBuffer(f *testing.F) {
	f.Add([]byte("hello world"), uint16(3), uint16(5), int64(20))
	f.Add(bytes.Repeat([]byte("ab"), 40000), uint16(4096), uint16(33000), int64(40000))
	f.Fuzz(func(t *testing.T, data []byte, piece, readLen uint16, maxMem int64) {
		if maxMem < 0 || maxMem > 1<<20 {
			return
		}
		s, err := New(t.TempDir(), maxMem, 1<<20)
		require.NoError(t, err)
		b := s.NewBuffer()
		defer b.Close()
		step := int(piece)%5000 + 1
		for p := data; len(p) > 0; {
			n := min(step, len(p))
			w, err := b.Write(p[:n])
			require.NoError(t, err)
			require.Equal(t, n, w)
			p = p[n:]
		}
		require.Equal(t, data, readAll(t, b))
		if len(data) > 0 {
			off := int64(readLen) % int64(len(data))
			p := make([]byte, int(readLen)%(len(data)+1))
			n, _ := b.ReadAt(p, off)
			require.Equal(t, data[off:off+int64(n)], p[:n])
		}
	})
}

// TestChunksReusedWithinBudget: the chunks of closed buffers serve the next
// ones (the same memory, not new allocations), a closed buffer cannot be
// read (its chunks may hold another capture's bytes by then), and what is
// kept never exceeds what the budget leaves unused, nor its kept share.
func TestChunksReusedWithinBudget(t *testing.T) {
	const budget = 256 << 10
	s, err := New(t.TempDir(), 128<<10, budget)
	require.NoError(t, err)
	body := bytes.Repeat([]byte("a"), 100<<10)
	a := s.NewBuffer()
	_, _ = a.Write(body)
	first := a.chunks[1]
	require.NoError(t, a.Close())
	_, err = a.ReadAt(make([]byte, 10), 0)
	require.Error(t, err, "a closed buffer must not be read")

	b := s.NewBuffer()
	other := bytes.Repeat([]byte("b"), 100<<10)
	_, _ = b.Write(other)
	require.Contains(t, b.chunks, first, "a kept chunk is reused")
	require.Equal(t, other, readAll(t, b))

	// Many buffers filling the budget, then all closed at once: what is
	// kept stays within the budget.
	var bufs []*Buffer
	for range 8 {
		c := s.NewBuffer()
		_, _ = c.Write(body)
		bufs = append(bufs, c)
	}
	require.NoError(t, b.Close())
	for _, c := range bufs {
		require.NoError(t, c.Close())
	}
	require.Zero(t, s.MemoryInUse())
	require.LessOrEqual(t, s.free.bytes, int64(budget/keptShare))
}
