package bench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// writeSoakWARC writes one closed WARC file with a response record for
// each soak id into dir.
func writeSoakWARC(t *testing.T, dir string, ids ...string) {
	t.Helper()
	p, err := writer.New(writer.Options{Dir: dir, Compression: warcscan.Gzip, Hostname: "test", Workers: 1}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	block := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
	for _, id := range ids {
		require.NoError(t, p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{{
			Type: "response", TargetURI: "http://127.0.0.1/bytes/2?soak=" + id, ContentType: "application/http; msgtype=response",
			Block: strings.NewReader(block), BlockLength: int64(len(block)),
		}}}))
	}
	require.NoError(t, p.Close(context.Background()))
}

// The collector reads closed files as they appear and deletes them, leaves
// a file still open alone until the end, when it is an error.
func TestWARCCollector(t *testing.T) {
	dir := t.TempDir()
	writeSoakWARC(t, dir, "1", "2")
	open := filepath.Join(dir, "WARCPROX-later.warc.gz.open")
	require.NoError(t, os.WriteFile(open, nil, 0o644))
	c := newWARCCollector(dir, false)
	require.NoError(t, c.collect(false))
	require.Len(t, c.captures[1], 1)
	require.Len(t, c.captures[2], 1)
	require.Equal(t, int64(1), c.files)
	left, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	require.Empty(t, left, "read files are deleted")
	require.ErrorContains(t, c.collect(true), "still open")

	require.NoError(t, os.Remove(open))
	keep := t.TempDir()
	writeSoakWARC(t, keep, "3")
	k := newWARCCollector(keep, true)
	require.NoError(t, k.collect(false))
	require.NoError(t, k.collect(true))
	require.Len(t, k.captures[3], 1, "a kept file is read once")
	left, _ = filepath.Glob(filepath.Join(keep, "*.warc.gz"))
	require.Len(t, left, 1)
}
