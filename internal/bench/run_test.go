package bench

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// countingOrigin is an Origin that counts the connections it accepts and
// records the paths it serves.
type countingOrigin struct {
	*httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	paths []string
}

func startOrigin(t *testing.T, useTLS bool) *countingOrigin {
	t.Helper()
	o := &countingOrigin{}
	origin := NewOrigin()
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.paths = append(o.paths, r.Method+" "+r.URL.RequestURI())
		o.mu.Unlock()
		origin.ServeHTTP(w, r)
	}))
	o.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	if useTLS {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

func (o *countingOrigin) served() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.paths...)
}

func targets(t *testing.T, urls ...string) []Target {
	t.Helper()
	out := make([]Target, len(urls))
	for i, u := range urls {
		tg, err := ParseTarget(u)
		require.NoError(t, err)
		out[i] = tg
	}
	return out
}

// closedPort returns a 127.0.0.1 address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func baseConfig(tg []Target, n int64) RunConfig {
	return RunConfig{Targets: tg, N: n, Concurrency: 4, Method: "GET", Mode: ModeKeepAlive, Timeout: 10 * time.Second}
}

func TestRunDirect(t *testing.T) {
	o := startOrigin(t, false)
	dead := "http://" + closedPort(t) + "/bytes/10"
	for _, c := range []struct {
		name      string
		urls      []string
		method    string
		n         int64
		successes int64
		errors    map[string]int64
		bodyBytes int64
		status    map[int]int64
	}{
		{name: "bytes", urls: []string{o.URL + "/bytes/1000"}, n: 20, successes: 20, bodyBytes: 20_000, status: map[int]int64{200: 20}},
		{name: "head", urls: []string{o.URL + "/bytes/1000"}, method: "HEAD", n: 10, successes: 10, bodyBytes: 0, status: map[int]int64{200: 10}},
		{name: "stream gzip", urls: []string{o.URL + "/stream/1KB/4?gzip=1"}, n: 6, successes: 6, bodyBytes: -1, status: map[int]int64{200: 6}},
		{name: "5xx", urls: []string{o.URL + "/status/500"}, n: 8, errors: map[string]int64{ErrStatus5xx: 8}, bodyBytes: -1, status: map[int]int64{500: 8}},
		{name: "4xx", urls: []string{o.URL + "/status/404"}, n: 8, errors: map[string]int64{ErrStatus4xx: 8}, bodyBytes: -1, status: map[int]int64{404: 8}},
		{name: "closed port", urls: []string{dead}, n: 8, errors: map[string]int64{ErrDial: 8}, bodyBytes: 0, status: map[int]int64{}},
		{
			name: "round robin", urls: []string{o.URL + "/bytes/10", o.URL + "/status/503", dead, o.URL + "/status/302"}, n: 12,
			successes: 6, errors: map[string]int64{ErrStatus5xx: 3, ErrDial: 3}, bodyBytes: -1,
			status: map[int]int64{200: 3, 503: 3, 302: 3},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig(targets(t, c.urls...), c.n)
			if c.method != "" {
				cfg.Method = c.method
			}
			res, err := Run(context.Background(), cfg)
			require.NoError(t, err)
			require.Equal(t, c.n, res.Requests)
			require.Equal(t, c.successes, res.Successes)
			if c.errors == nil {
				c.errors = map[string]int64{}
			}
			require.Equal(t, c.errors, res.Errors)
			require.Equal(t, c.status, res.Status)
			if c.bodyBytes >= 0 {
				require.Equal(t, c.bodyBytes, res.BodyBytes)
			}
			var timed int64
			for _, n := range c.status {
				timed += n
			}
			require.Equal(t, uint64(timed), res.Latency.Count(), "every response is timed")
			s := res.Summary()
			require.Equal(t, c.n-c.successes, s.Errors)
		})
	}
}

func TestRunTimeout(t *testing.T) {
	o := startOrigin(t, false)
	cfg := baseConfig(targets(t, o.URL+"/delay/10000"), 2)
	cfg.Timeout = 50 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{ErrTimeout: 2}, res.Errors)
}

func TestRunDuration(t *testing.T) {
	o := startOrigin(t, false)
	cfg := baseConfig(targets(t, o.URL+"/bytes/100"), 0)
	cfg.Duration = 200 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Positive(t, res.Successes)
	require.Equal(t, res.Requests, res.Successes)
}

// TestRunModes counts the connections the origin accepts: one per request
// with new-conn, a handful for 20 requests at concurrency 2 with keepalive.
func TestRunModes(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		for _, c := range []struct {
			mode      string
			wantConns func(n int64) bool
		}{
			// net/http may dial a spare connection while another frees
			// up, so a few more than the concurrency can appear; the
			// point is that they are reused.
			{ModeKeepAlive, func(n int64) bool { return n >= 1 && n <= 8 }},
			{ModeNewConn, func(n int64) bool { return n == 20 }},
		} {
			t.Run(c.mode+map[bool]string{false: "/http", true: "/https"}[useTLS], func(t *testing.T) {
				o := startOrigin(t, useTLS)
				cfg := baseConfig(targets(t, o.URL+"/bytes/100"), 20)
				cfg.Concurrency = 2
				cfg.Mode = c.mode
				cfg.Insecure = true
				res, err := Run(context.Background(), cfg)
				require.NoError(t, err)
				require.Equal(t, int64(20), res.Successes)
				require.True(t, c.wantConns(o.conns.Load()), "%s: %d connections", c.mode, o.conns.Load())
			})
		}
	}
}

func TestRunValidate(t *testing.T) {
	tg := []Target{{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}}}
	for _, c := range []struct {
		name   string
		mutate func(*RunConfig)
		want   string
	}{
		{"no targets", func(c *RunConfig) { c.Targets = nil }, "no targets"},
		{"no end", func(c *RunConfig) { c.N = 0 }, "-n or --duration"},
		{"concurrency", func(c *RunConfig) { c.Concurrency = 0 }, "concurrency"},
		{"method", func(c *RunConfig) { c.Method = "POST" }, "GET or HEAD"},
		{"mode", func(c *RunConfig) { c.Mode = "http3" }, "keepalive"},
	} {
		cfg := baseConfig(tg, 1)
		c.mutate(&cfg)
		_, err := Run(context.Background(), cfg)
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// TestRunThroughProxy loads a real warcproxy (HTTP and HTTPS MITM), checks
// the WARCs hold one response per request, then replays their request
// records against an origin and checks the same requests arrive.
func TestRunThroughProxy(t *testing.T) {
	plain := startOrigin(t, false)
	secure := startOrigin(t, true)
	p := proxytest.Start(t, nil)

	const perTarget = 6
	urls := []string{plain.URL + "/bytes/2KB", secure.URL + "/bytes/3KB?text=1", plain.URL + "/stream/1KB/3?gzip=1"}
	for _, mode := range []string{ModeKeepAlive, ModeNewConn} {
		cfg := baseConfig(targets(t, urls...), perTarget*int64(len(urls)))
		cfg.Proxy = p.URL
		cfg.Insecure = true
		cfg.Mode = mode
		res, err := Run(context.Background(), cfg)
		require.NoError(t, err)
		require.Equal(t, cfg.N, res.Successes, "%s: %v", mode, res.Errors)
		require.Empty(t, res.Errors)
		require.Equal(t, map[string]int64{"HTTP/1.1": cfg.N}, res.Protocols)
	}
	// --http2: the HTTPS target's requests are streams in the proxy's
	// tunnel; plain HTTP stays HTTP/1.1.
	cfg := baseConfig(targets(t, urls...), perTarget*int64(len(urls)))
	cfg.Proxy, cfg.Insecure, cfg.HTTP2 = p.URL, true, true
	res, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, cfg.N, res.Successes, "%v", res.Errors)
	require.Equal(t, map[string]int64{"HTTP/1.1": 2 * perTarget, "HTTP/2.0": perTarget}, res.Protocols)

	// An unreachable origin is a 502 from the proxy, plain or CONNECT.
	cfg = baseConfig(targets(t, "http://"+closedPort(t)+"/x", "https://"+closedPort(t)+"/x"), 4)
	cfg.Proxy = p.URL
	cfg.Insecure = true
	res, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{ErrStatus5xx: 4}, res.Errors)
	require.Equal(t, map[int]int64{http.StatusBadGateway: 4}, res.Status)
	p.Stop()

	want := map[string]int{}
	for _, u := range urls {
		want[u] = 3 * perTarget
	}
	got := map[string]int{}
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" {
			got[r.TargetURI]++
		}
	}
	require.Equal(t, want, got, "one response record per request")

	// Replay every request record against the plain origin.
	var files []string
	require.NoError(t, filepath.WalkDir(p.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".warc") {
			files = append(files, path)
		}
		return err
	}))
	require.NotEmpty(t, files)
	replayTo := startOrigin(t, false)
	target, err := ParseReplayTarget("http://" + replayTo.Listener.Addr().String())
	require.NoError(t, err)
	tg, err := ReadReplay(files, target)
	require.NoError(t, err)
	require.Len(t, tg, 3*perTarget*len(urls))
	for _, x := range tg {
		require.Equal(t, replayTo.Listener.Addr().String(), x.URL.Host)
		require.Empty(t, x.Header.Get("Host"))
		require.Empty(t, x.Header.Get("Connection"))
	}
	cfg = baseConfig(tg, int64(len(tg)))
	res, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, int64(len(tg)), res.Successes, "%v", res.Errors)

	var wantPaths []string
	for _, u := range urls {
		pu, err := url.Parse(u)
		require.NoError(t, err)
		for range 3 * perTarget {
			wantPaths = append(wantPaths, "GET "+pu.RequestURI())
		}
	}
	gotPaths := replayTo.served()
	sort.Strings(wantPaths)
	sort.Strings(gotPaths)
	require.Equal(t, wantPaths, gotPaths)
}
