package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDedupProgressLine(t *testing.T) {
	l := newDedupLive()
	l.set("redis fill to 1M", 200_000, 1_000_000)
	l.done.Add(100_000)
	require.Equal(t, "redis fill to 1M: 300k/1M  50k/s  ETA 14s", l.line(l.since.Add(2*time.Second)))
	l.set("redis settling", 0, 0)
	require.Equal(t, "redis settling", l.line(time.Now()))
}

func TestClearLine(t *testing.T) {
	var b bytes.Buffer
	_, err := ClearLine(&b).Write([]byte("level=INFO msg=measured\n"))
	require.NoError(t, err)
	require.Equal(t, "\r\033[Klevel=INFO msg=measured\n", b.String())
}
