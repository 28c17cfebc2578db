package cdxj_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// oneWARC writes a closed WARC file with one response record into dir.
func oneWARC(t *testing.T, dir string) string {
	t.Helper()
	block := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhi"
	p, err := writer.New(writer.Options{Dir: dir, Compression: warcscan.Gzip, Hostname: "test", Workers: 1}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{{
		Type: "response", TargetURI: "http://example.com/", ContentType: "application/http; msgtype=response",
		Block: strings.NewReader(block), BlockLength: int64(len(block)),
	}}}))
	require.NoError(t, p.Close(context.Background()))
	paths := warcFiles(t, dir)
	require.Len(t, paths, 1)
	return paths[0]
}

// The indexer works through what was queued before and after it started,
// and Run returns once it is closed and the queue is empty; a file it
// cannot index is logged and skipped.
func TestIndexerIndexesQueuedFiles(t *testing.T) {
	first, second := oneWARC(t, t.TempDir()), oneWARC(t, t.TempDir())
	ix := cdxj.NewIndexer(slog.New(slog.DiscardHandler))
	ix.Add(first)
	ix.Add(filepath.Join(t.TempDir(), "gone.warc.gz"))
	done := make(chan error, 1)
	go func() { done <- ix.Run(context.Background()) }()
	ix.Add(second)
	ix.Close()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	for _, warc := range []string{first, second} {
		_, err := os.Stat(strings.TrimSuffix(warc, ".warc.gz") + ".cdxj")
		require.NoError(t, err, "index of %s", warc)
	}
}

// When the shutdown budget is spent, Run stops indexing, and once the
// writer has closed its last file (Close) says how many were left
// unindexed, those closed after the deadline included; files that fit in
// what is still indexed after the cut (a few megabytes) get their index.
func TestIndexerStopsAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name      string
		budget    int64
		unindexed string // "" when both are indexed
	}{
		{"small files still indexed", 64 << 20, ""},
		{"over what is indexed after the cut", 1, "2 files not indexed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer cdxj.SetAfterCutBudget(tc.budget)()
			ix := cdxj.NewIndexer(slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			first := oneWARC(t, t.TempDir())
			ix.Add(first)
			done := make(chan error, 1)
			go func() { done <- ix.Run(ctx) }()
			second := oneWARC(t, t.TempDir())
			ix.Add(second) // closed by a writer after the deadline
			select {
			case err := <-done:
				t.Fatalf("Run returned before Close: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			ix.Close()
			err := <-done
			if tc.unindexed != "" {
				require.ErrorContains(t, err, tc.unindexed)
				return
			}
			require.NoError(t, err)
			for _, warc := range []string{first, second} {
				_, err := os.Stat(strings.TrimSuffix(warc, ".warc.gz") + ".cdxj")
				require.NoError(t, err, "index of %s", warc)
			}
		})
	}
}
