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
	require.Equal(t, []string{"t_s", "rss_mb", "fds", "goroutines", "queue", "urls_per_s", "heap_mb"}, recs[0])
	svg, err := os.ReadFile(filepath.Join(out, "soak.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "<polyline")
}

func TestSoakBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--proxy-bin", "/nonexistent/warcproxy"},
		{"--proxy-bin", proxyBin, "--concurrency", "0"},
		{"--proxy-bin", proxyBin, "--duration", "0s"},
		{"--proxy-bin", proxyBin, "--redis", "/nonexistent/redis-server"},
		{"--proxy-bin", proxyBin, "stray"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), append([]string{"soak", "--out", t.TempDir()}, args...), &stdout, &stderr)
		require.Equal(t, 2, code, "%q: %s", args, stderr.String())
	}
}
