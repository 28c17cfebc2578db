//go:build unix

package wacz_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/wacz"
)

// TestLockedInputRefused: a WARC a running proxy still writes under its
// final name (--no-warc-open-suffix) holds the writer's exclusive flock;
// packing it is refused before anything is written, and the same file
// packs once the lock is gone.
func TestLockedInputRefused(t *testing.T) {
	src := generateWARC(t, t.TempDir(), true, 2, 1000)
	f, err := os.Open(src)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)) // as writer.lockFile
	out := filepath.Join(t.TempDir(), "crawl.wacz")
	_, err = wacz.Pack(t.Context(), []string{src}, wacz.Options{Output: out})
	var ae *wacz.ArgError
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.ErrorContains(t, err, "still being written: a running warcproxy holds its lock")
	require.NoFileExists(t, out)

	require.NoError(t, f.Close()) // the proxy closed it
	_, err = wacz.Pack(t.Context(), []string{src}, wacz.Options{Output: out})
	require.NoError(t, err)
}
