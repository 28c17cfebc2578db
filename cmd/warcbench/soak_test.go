package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/s3test"
)

// TestSoakCommand soaks the proxy TestMain built for a few seconds, with
// Redis when redis-server is installed.
func TestSoakCommand(t *testing.T) {
	redis, _ := exec.LookPath("redis-server")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"soak", "--proxy-bin", proxyBin, "--out", out, "--duration", "5s", "--concurrency", "4",
		"--sample", "250ms", "--socket-timeout", "1s", "--redis=" + redis,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	report := stdout.String()
	require.Regexp(t, regexp.MustCompile(`(?m)^accounting: exact: \d+ exchanges: [1-9]\d* whole, .*missing 0, duplicates 0, wrong truncation 0, unexpected 0$`), report)
	require.Contains(t, report, "proxy exit after SIGTERM: code 0")
	require.Contains(t, report, "verdict: PASS")
	require.Contains(t, report, "not judged", "a 2.5s half says nothing about leaks")
	if redis != "" {
		require.Contains(t, report, "restarted at")
	}
	txt, err := os.ReadFile(filepath.Join(out, "soak.txt"))
	require.NoError(t, err)
	require.Equal(t, report, string(txt))
	recs := readCSV(t, filepath.Join(out, "soak.csv"))
	require.Greater(t, len(recs), 10, "a header and a sample every 250ms")
	require.Equal(t, []string{"t_s", "rss_mb", "fds", "goroutines", "queue", "urls_per_s", "heap_mb", "upload_backlog_mb"}, recs[0])
	require.Empty(t, recs[1][7], "no backlog without uploads")
	svg, err := os.ReadFile(filepath.Join(out, "soak.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "<polyline")
}

// TestSoakCommandUploads soaks with --upload-store for a few seconds: the
// accounting reads the bucket, and the report says what was shipped.
func TestSoakCommandUploads(t *testing.T) {
	bin := s3test.Bin(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"soak", "--proxy-bin", proxyBin, "--out", out, "--duration", "5s", "--concurrency", "4",
		"--sample", "250ms", "--socket-timeout", "1s", "--redis=", "--upload-store", bin,
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	report := stdout.String()
	require.Contains(t, report, "verdict: PASS")
	require.Regexp(t, regexp.MustCompile(`(?m)^shipped: .*events [1-9]\d* .*WARC events whose object was missing 0; WARCs in the bucket without an event 0; closed files left in --dir 0$`), report)
	recs := readCSV(t, filepath.Join(out, "soak.csv"))
	require.NotEmpty(t, recs[1][7], "the upload backlog is sampled")
}

func TestSoakBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--proxy-bin", "/nonexistent/warcproxy"},
		{"--proxy-bin", proxyBin, "--concurrency", "0"},
		{"--proxy-bin", proxyBin, "--duration", "0s"},
		{"--proxy-bin", proxyBin, "--redis", "/nonexistent/redis-server"},
		{"--proxy-bin", proxyBin, "--upload-store", "/nonexistent/versitygw"},
		{"--proxy-bin", proxyBin, "stray"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), append([]string{"soak", "--out", t.TempDir()}, args...), &stdout, &stderr)
		require.Equal(t, 2, code, "%q: %s", args, stderr.String())
	}
}
