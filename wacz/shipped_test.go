package wacz

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/upload"
)

// A WARC the proxy shipped away (--upload-to) and removed is named with
// where it went, by file and by a pattern that matched nothing.
func TestShippedWARCsSayWhereTheyWent(t *testing.T) {
	dir := t.TempDir()
	states := filepath.Join(dir, upload.StateDir, "jobA")
	require.NoError(t, os.MkdirAll(states, 0o755))
	for _, name := range []string{"a.warc.gz", "b.warc.gz"} {
		st := upload.State{Kind: upload.KindWARC, Path: filepath.Join(dir, "jobA", name), Key: "crawl/jobA/" + name,
			URL: "s3://archive/crawl/jobA/" + name, Target: "s3://archive/crawl/", Shipped: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
		b, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(states, name+".json"), b, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "jobA"), 0o755))

	_, err := checkInputs([]string{filepath.Join(dir, "jobA", "a.warc.gz")})
	require.ErrorContains(t, err, "no such file: it was shipped to s3://archive/crawl/jobA/a.warc.gz on 2026-12-04 10:00 UTC and removed here")
	_, err = checkInputs([]string{filepath.Join(dir, "jobA", "*.warc.gz")})
	require.ErrorContains(t, err, "no file matches this pattern: 2 WARC files from "+dir+" were shipped to s3://archive/crawl/")

	_, err = checkInputs([]string{filepath.Join(t.TempDir(), "c.warc.gz")})
	require.ErrorContains(t, err, "no such file or directory", "without states, the plain error")
}
