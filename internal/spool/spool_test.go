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
	require.LessOrEqual(t, s.MemoryInUse(), int64(64<<10))
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
