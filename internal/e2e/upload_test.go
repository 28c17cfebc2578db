package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/faultfs"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/s3test"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestUploadDiskFullWhileTheStoreIsDown: --dir on a small real disk
// (tmpfs) fills while the store does not answer and the backlog grows;
// the writer waits, as on any full disk, with its captures queued. Once
// the store answers, shipping frees the disk and every capture is
// written, shipped once, and readable from the bucket.
func TestUploadDiskFullWhileTheStoreIsDown(t *testing.T) {
	dir := faultfs.Tmpfs(t, 1<<20)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "archive")
	origin := newDiskOrigin(t, 16<<10)
	p := proxytest.Start(t, func(c *config.Config) {
		c.Dir = dir
		c.TmpDir = t.TempDir()
		c.QueueSize = 8
		c.QueueFullTimeout = 300 * time.Millisecond
		c.WriterWorkers = 1
		c.RolloverSize = 128 << 10
		c.UploadTo = "s3://" + bucket + "/full"
		c.UploadEndpoint = srv.Endpoint
	})
	client := p.Client()
	defer client.CloseIdleConnections()

	require.NoError(t, srv.Freeze())
	var ok []string
	for i := 0; i < 200 && p.Status(t)["writer_errors"].(float64) == 0; i++ {
		url, o := origin.get(client, fmt.Sprintf("/page/%d", i))
		require.NoError(t, o.err)
		require.True(t, o.ok, "GET %s: %s", url, o.refused)
		ok = append(ok, url)
		if i%4 == 3 {
			time.Sleep(20 * time.Millisecond) // let the writer catch up: captures queue only at the full disk
		}
	}
	require.Eventually(t, func() bool { return p.Status(t)["writer_errors"].(float64) >= 1 }, diskWait, 10*time.Millisecond,
		"the disk never filled")
	up := p.Status(t)["upload"].(map[string]any)
	require.Positive(t, up["backlog_files"], "closed files wait for the store")

	require.NoError(t, srv.Thaw())
	p.Settle()
	p.Stop()
	require.Empty(t, warcsUnder(t, dir), "every file shipped and removed")
	got := srv.Download(t, bucket, "full")
	warcs, _ := filepath.Glob(filepath.Join(got, "*.warc.gz"))
	seen := map[string]int{}
	for _, r := range warccheck.Files(t, warcs...) {
		if r.Type == "response" {
			seen[r.TargetURI]++
		}
	}
	for _, u := range ok {
		require.Equal(t, 1, seen[u], "%s in the bucket once", u)
	}
	require.Len(t, seen, len(ok))
}

func warcsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	for _, pat := range []string{"*.warc.gz", "*.warc.gz.open"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		found = append(found, m...)
	}
	return found
}
