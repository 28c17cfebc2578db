package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

func TestRunJSON(t *testing.T) {
	origin := httptest.NewServer(bench.NewOrigin())
	defer origin.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())

	urlFile := filepath.Join(t.TempDir(), "urls.txt")
	require.NoError(t, os.WriteFile(urlFile, []byte("# a comment\n"+origin.URL+"/status/500\n\n"), 0o600))

	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"run", "--json", "-n", "9", "-c", "3", origin.URL + "/bytes/1KB", "--urls", urlFile, "http://" + dead + "/",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "errors counted are not a failure: %s", stderr.String())
	var s bench.Summary
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
	require.Equal(t, int64(9), s.Requests)
	require.Equal(t, int64(3), s.Successes)
	require.Equal(t, int64(6), s.Errors)
	require.Equal(t, map[string]int64{bench.ErrStatus5xx: 3, bench.ErrDial: 3}, s.ErrorKinds)
	require.Equal(t, map[string]int64{"200": 3, "500": 3}, s.Status)
	require.Equal(t, int64(3*1024+3*len("500 Internal Server Error\n")), s.BodyBytes)
	require.Equal(t, 1, strings.Count(stdout.String(), "\n"), "one JSON object, one line")

	stdout.Reset()
	code = realMain(context.Background(), []string{"run", "-n", "2", "--method", "HEAD", origin.URL + "/bytes/1KB"}, &stdout, &stderr)
	require.Equal(t, 0, code)
	require.Contains(t, stdout.String(), "URLs/s")
	require.Contains(t, stdout.String(), "p99")
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"bogus"}, 2},
		{[]string{"help"}, 0},
		{[]string{"run", "--help"}, 0},
		{[]string{"origin", "--help"}, 0},
		{[]string{"run"}, 2},
		{[]string{"run", "--nope", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "--mode", "http9", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "--method", "POST", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "-c", "0", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "ftp://127.0.0.1:1/"}, 2},
		{[]string{"run", "--proxy", "127.0.0.1:8000", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "--replay-target", "127.0.0.1:1", "http://127.0.0.1:1/"}, 2},
		{[]string{"run", "--replay", "/nonexistent.warc.gz"}, 1},
		{[]string{"origin", "extra"}, 2},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), c.args, &stdout, &stderr)
		require.Equal(t, c.code, code, "%q: %s", c.args, stderr.String())
	}
}

// TestOriginHTTP2NeedsTLS: --http2 without --tls-port is a mistake, not
// an origin serving HTTP/1.1 to a measurement meant for HTTP/2 (the
// context is done, so a command that starts anyway returns at once).
func TestOriginHTTP2NeedsTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := realMain(ctx, []string{"origin", "--http2", "--port", "0"}, &stdout, &stderr)
	require.Equal(t, 2, code, stderr.String())
	require.Contains(t, stderr.String(), "--http2 needs --tls-port")
}

// TestOriginCommand starts the origin subcommand, reads the URLs it prints
// and fetches from both.
func TestOriginCommand(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- realMain(ctx, []string{"origin", "--port", "0", "--tls-port", "0"}, pw, io.Discard)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var urls []string
	for len(urls) < 2 && sc.Scan() {
		urls = append(urls, sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.Len(t, urls, 2)
	require.True(t, strings.HasPrefix(urls[0], "http://127.0.0.1:"), urls[0])
	require.True(t, strings.HasPrefix(urls[1], "https://127.0.0.1:"), urls[1])

	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"run", "--json", "--insecure", "-n", "4", "--mode", "new-conn", urls[0] + "/bytes/100", urls[1] + "/delay/1"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var s bench.Summary
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s))
	require.Equal(t, int64(4), s.Successes, "%v", s.ErrorKinds)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("origin did not stop")
	}
}

// TestRunProxyAndReplay loads a real warcproxy through the command, then
// replays the WARCs it wrote (.warc.gz, .warc.zst) with --replay and
// --replay-target.
func TestRunProxyAndReplay(t *testing.T) {
	for _, compression := range []string{"gzip", "zstd"} {
		t.Run("compression="+compression, func(t *testing.T) { testRunProxyAndReplay(t, compression) })
	}
}

func testRunProxyAndReplay(t *testing.T, compression string) {
	origin := httptest.NewServer(bench.NewOrigin())
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) { c.Compression = compression })
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"run", "--json", "--proxy", p.URL.String(), "-n", "6", origin.URL + "/bytes/1KB", origin.URL + "/status/404"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var s bench.Summary
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s))
	require.Equal(t, int64(3), s.Successes)
	require.Equal(t, map[string]int64{bench.ErrStatus4xx: 3}, s.ErrorKinds)
	p.Stop()
	responses := 0
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" || r.Type == "revisit" {
			responses++
		}
	}
	require.Equal(t, 6, responses, "one response (or revisit) record per request")

	files, err := filepath.Glob(filepath.Join(p.Dir, "*.warc*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		require.True(t, strings.HasSuffix(f, map[string]string{"gzip": ".warc.gz", "zstd": ".warc.zst"}[compression]), f)
	}
	replayTo := httptest.NewServer(bench.NewOrigin())
	defer replayTo.Close()
	args := append([]string{"run", "--json", "-n", "6", "--replay-target", replayTo.Listener.Addr().String(), "--replay"}, files...)
	stdout.Reset()
	code = realMain(context.Background(), args, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s))
	require.Equal(t, int64(6), s.Requests)
	require.Equal(t, map[string]int64{"200": 3, "404": 3}, s.Status)
}
