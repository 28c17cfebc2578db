package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestRedisDown: with the dedup and stats stores on a Redis that is not
// there, fetches are answered at once and recorded in full, every line the
// process writes with --log-format json is JSON (the Redis client's own
// lines included), and SIGTERM ends the process within --shutdown-timeout,
// exit 1 since the dedup saves and stats could not be stored.
func TestRedisDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	}))
	defer origin.Close()
	dir := t.TempDir()
	warcs := filepath.Join(dir, "warcs")
	p := startMain(t, "--port", "0", "--dir", warcs, "--cacert", filepath.Join(dir, "ca.pem"),
		"--dedup-db", "redis://"+dead+"/0", "--stats-db", "redis://"+dead+"/0",
		"--log-format", "json", "--shutdown-timeout", "3s")
	proxyURL, _ := url.Parse("http://127.0.0.1:" + p.port)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 10 * time.Second}
	for i := range 5 {
		start := time.Now()
		resp, err := client.Get(fmt.Sprintf("%s/p%d", origin.URL, i))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, fmt.Sprintf("body of /p%d", i), string(body))
		require.Less(t, time.Since(start), time.Second, "a dead store does not hold the client")
	}
	client.CloseIdleConnections()

	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	code := p.wait(t, 3*time.Second+2*time.Second)
	t.Logf("exited %d after %s", code, time.Since(start).Round(time.Millisecond))
	require.Equal(t, 1, code, "dedup saves and stats were lost: a failure")

	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	require.Greater(t, len(lines), 3)
	for _, l := range lines {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &v), "not a JSON log line: %s", l)
		if e, ok := v["err"].(string); ok {
			require.NotContains(t, e, "dedup lookup: dedup lookup", "an error repeats its prefix")
		}
	}
	responses := 0
	for _, r := range warccheck.Dir(t, warcs) {
		if r.Type == "response" {
			responses++
		}
	}
	require.Equal(t, 5, responses, "every fetch recorded in full")
}
