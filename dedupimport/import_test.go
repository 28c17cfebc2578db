package dedupimport

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/digest"
)

// TestImportProgress: with a progress writer (a terminal) the import shows
// files and records as it goes and clears its line at the end, so that
// the summary starts on a clean line.
func TestImportProgress(t *testing.T) {
	var recs strings.Builder
	for range 300 {
		recs.WriteString(warcRecord("response", "<urn:uuid:1>", "http://ex.com/", "", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody"))
	}
	p := filepath.Join(t.TempDir(), "x.warc")
	require.NoError(t, os.WriteFile(p, []byte(recs.String()), 0o644))
	ins, err := CheckInputs([]string{p, p})
	require.NoError(t, err)
	var progress bytes.Buffer
	var s dedupstest.MemStore
	sum, err := Import(context.Background(), &s, ins, Options{Digest: digest.SHA1, Base32: true, Progress: &progress})
	require.NoError(t, err)
	require.EqualValues(t, 600, sum.Read)
	require.EqualValues(t, 1, sum.Added, "one payload")
	require.EqualValues(t, 599, sum.Present, "found again, in this import")
	require.Contains(t, progress.String(), "\rfile 1 of 2, 256 records read")
	require.True(t, strings.HasSuffix(progress.String(), "\r\x1b[K"), "%q", progress.String())
}

// TestImportInterrupted: a canceled import stops at once, says so, and
// writes nothing more.
func TestImportInterrupted(t *testing.T) {
	var recs strings.Builder
	for i := range 600 {
		recs.WriteString(warcRecord("response", "<urn:uuid:1>", "http://ex.com/", "", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbody "+strings.Repeat("x", i)))
	}
	p := filepath.Join(t.TempDir(), "x.warc")
	require.NoError(t, os.WriteFile(p, []byte(recs.String()), 0o644))
	ins, err := CheckInputs([]string{p})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var s dedupstest.MemStore
	sum, err := Import(ctx, &s, ins, Options{Digest: digest.SHA1, Base32: true})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "interrupted")
	require.EqualValues(t, 256, sum.Read, "stopped at the first check")
	require.Zero(t, s.Len())
}
