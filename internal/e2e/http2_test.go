package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// h2Client is a Go client that speaks HTTP/2 to the proxy inside its
// CONNECT tunnels, and counts the connections it opens to the proxy.
func h2Client(p *proxytest.Proxy, dials *atomic.Int64) *http.Client {
	d := net.Dialer{}
	tr := &http.Transport{
		Proxy:             http.ProxyURL(p.URL),
		TLSClientConfig:   &tls.Config{RootCAs: p.CAPool},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// curlH2 runs curl through the proxy, trusting the proxy's CA (curl sees
// only the proxy's certificates), and returns its output.
func curlH2(t *testing.T, p *proxytest.Proxy, args ...string) string {
	t.Helper()
	curl := needTool(t, "curl", "curl")
	cmd := exec.Command(curl, append([]string{"-sS", "--no-progress-meter", "-x", p.URL.String(), "--cacert", p.App.CACertFile()}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "curl: %s%s", out, stderr.String())
	return string(out)
}

// TestHTTP2ManyStreamsOneTunnel: curl --http2 --parallel sends 40 requests
// as streams of one connection; each is answered over HTTP/2, fetched
// upstream over HTTP/1.1 and recorded once, its request record the
// origin-form HTTP/1.1 request the origin received.
func TestHTTP2ManyStreamsOneTunnel(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, nil)
	args := []string{"--http2", "--parallel", "--parallel-max", "40", "-w", "%{http_version} %{http_code} %{num_connects}\n"}
	for i := range 40 {
		args = append(args, "-o", "/dev/null", fmt.Sprintf("%s/s%d?x=%d", origin.URL, i, i))
	}
	out := curlH2(t, p, args...)
	connects := 0
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 40, out)
	for _, l := range lines {
		var v string
		var code, n int
		_, err := fmt.Sscan(l, &v, &code, &n)
		require.NoError(t, err, l)
		require.Equal(t, "2", v, "curl speaks HTTP/2 to the proxy: %s", l)
		require.Equal(t, 200, code)
		connects += n
	}
	require.Equal(t, 1, connects, "all 40 streams over one connection to the proxy")
	require.Equal(t, float64(40), oneMetric(t, p, "warcproxy_proxy_http2_streams_total"))

	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	res, req := byType(t, recs, "response"), byType(t, recs, "request")
	require.Len(t, res, 40)
	for i := range 40 {
		uri := fmt.Sprintf("%s/s%d?x=%d", origin.URL, i, i)
		require.Contains(t, string(res[uri].Block), fmt.Sprintf("GET /s%d?x=%d body=", i, i))
		head := string(req[uri].Block)
		require.True(t, strings.HasPrefix(head, fmt.Sprintf("GET /s%d?x=%d HTTP/1.1\r\nHost: %s\r\n", i, i, origin.Listener.Addr())), head)
	}
}

// TestHTTP2GoClient: Go's HTTP/2 client through the proxy; Warcprox-Meta
// holds per request (each stream's warc-prefix names its file); a request
// body reaches the origin and the request record.
func TestHTTP2GoClient(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, nil)
	var dials atomic.Int64
	c := h2Client(p, &dials)
	for _, prefix := range []string{"alpha", "beta"} {
		req, err := http.NewRequest(http.MethodPost, origin.URL+"/"+prefix, strings.NewReader("payload-"+prefix))
		require.NoError(t, err)
		req.Header.Set("Warcprox-Meta", `{"warc-prefix":"`+prefix+`"}`)
		resp, err := c.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 to the proxy")
		require.Equal(t, fmt.Sprintf("POST /%s body=%q te=[]", prefix, "payload-"+prefix), string(body))
	}
	// Over a limit: 420 on that stream, and the connection serves on.
	limited := `{"stats": {"buckets": ["h2job"]}, "limits": {"h2job/total/urls": 1}}`
	for i, want := range []int{200, 420, 200} {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/limited%d", origin.URL, i), nil)
		require.NoError(t, err)
		if i < 2 {
			req.Header.Set("Warcprox-Meta", limited)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		// Read to the stream's end, as a crawler does: the proxy ends the
		// stream once the capture is counted. Closing it unread resets
		// the stream at once, and the next request could be checked
		// before this one is counted.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, want, resp.StatusCode, "request %d", i)
	}
	require.Equal(t, int64(1), dials.Load(), "every request on one connection")
	p.Stop()
	for _, prefix := range []string{"alpha", "beta"} {
		files, err := filepath.Glob(filepath.Join(p.Dir, prefix+"-*.warc.gz"))
		require.NoError(t, err)
		recs := warccheck.Files(t, files...)
		req := byType(t, recs, "request")[origin.URL+"/"+prefix]
		require.Contains(t, string(req.Block), "payload-"+prefix, "the body is in the request record")
		require.NotContains(t, string(req.Block), "Warcprox-Meta")
	}
}

// holdOrigin answers /hold/* with 1 KB at once, then holds the rest of the
// body until release is closed or the proxy gives up the request; other
// paths get a short body. It tracks how many /hold requests are open.
type holdOrigin struct {
	*httptest.Server
	release  chan struct{}
	mu       sync.Mutex
	open     int
	maxOpen  int
	gaveUp   chan string // paths whose request the proxy abandoned
	received atomic.Int64
}

func newHoldOrigin(t *testing.T) *holdOrigin {
	o := &holdOrigin{release: make(chan struct{}), gaveUp: make(chan string, 100)}
	o.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.received.Add(1)
		if !strings.HasPrefix(r.URL.Path, "/hold/") {
			fmt.Fprintf(w, "quick %s", r.URL.Path)
			return
		}
		o.enter(1)
		defer o.enter(-1)
		w.Header().Set("Content-Length", "2048")
		_, _ = w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		select {
		case <-o.release:
			_, _ = w.Write(make([]byte, 1024))
		case <-r.Context().Done():
			o.gaveUp <- r.URL.Path
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *holdOrigin) enter(d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open += d
	o.maxOpen = max(o.maxOpen, o.open)
}

// TestHTTP2StreamsIndependent: on one HTTP/2 connection, a stream whose
// origin stalls does not hold the others; a client's RST_STREAM (Go's
// client cancelling one request) aborts that fetch only, which is recorded
// truncated, and the connection goes on serving.
func TestHTTP2StreamsIndependent(t *testing.T) {
	origin := newHoldOrigin(t)
	p := proxytest.StartLogged(t, nil)
	var dials atomic.Int64
	c := h2Client(p, &dials)
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin.URL+path, nil)
		return c.Do(req)
	}
	ctx, cancel := context.WithCancel(t.Context())
	slow, err := get(ctx, "/hold/cancelled")
	require.NoError(t, err)
	require.Equal(t, 2, slow.ProtoMajor)
	_, err = io.ReadFull(slow.Body, make([]byte, 1024))
	require.NoError(t, err, "the first KB of the stalled stream arrives")

	for i := range 5 {
		resp, err := get(t.Context(), fmt.Sprintf("/quick%d", i))
		require.NoError(t, err, "a stalled stream holds the others")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, fmt.Sprintf("quick /quick%d", i), string(body))
	}
	cancel() // RST_STREAM for that stream only
	slow.Body.Close()
	select {
	case path := <-origin.gaveUp:
		require.Equal(t, "/hold/cancelled", path)
	case <-time.After(10 * time.Second):
		t.Fatal("the origin fetch of the reset stream was not abandoned")
	}
	resp, err := get(t.Context(), "/after")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "quick /after", string(body), "the connection serves on after a reset stream")
	require.Equal(t, int64(1), dials.Load(), "one connection to the proxy throughout")

	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	require.Len(t, res, 7)
	require.Equal(t, "disconnect", res[origin.URL+"/hold/cancelled"].Header["WARC-Truncated"])
	require.Empty(t, res[origin.URL+"/after"].Header["WARC-Truncated"])
	require.NotContains(t, p.Log(), "upstream failed", "the client's reset is not the origin's failure")
}

// TestHTTP2StreamCap: --http2-max-streams bounds the streams one
// connection has open: Go's client, with five requests held open by the
// origin, has to open more connections to the proxy to send them all.
// (Go's client in its strict mode, which would queue them on one
// connection instead, stalls at its own limit even against Go's server.)
func TestHTTP2StreamCap(t *testing.T) {
	origin := newHoldOrigin(t)
	p := proxytest.Start(t, func(c *config.Config) { c.HTTP2MaxStreams = 2 })
	var dials atomic.Int64
	c := h2Client(p, &dials)
	// One request first: Go's client dials a connection per request until
	// it knows the proxy speaks HTTP/2.
	resp, err := c.Get(origin.URL + "/first")
	require.NoError(t, err)
	resp.Body.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for i := range 5 {
		wg.Go(func() {
			resp, err := c.Get(fmt.Sprintf("%s/hold/%d", origin.URL, i))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		})
	}
	require.Eventually(t, func() bool { return origin.received.Load() == 6 }, 10*time.Second, 10*time.Millisecond)
	close(origin.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, dials.Load(), int64(3), "5 streams at 2 per connection")
	// Go's client may give up a dial it no longer needs before its TLS
	// handshake: such a dial is no HTTP/2 connection.
	conns := oneMetric(t, p, "warcproxy_proxy_http2_connections_total")
	require.GreaterOrEqual(t, conns, 3.0)
	require.LessOrEqual(t, conns, float64(dials.Load()))
}

// TestHTTP2HeaderLimit: --max-header-bytes holds for HTTP/2 streams too:
// curl's request with headers over it is answered 431 and not fetched. (A
// single field longer than the limit is a compression error to Go's HTTP/2
// server, which then closes the connection.)
func TestHTTP2HeaderLimit(t *testing.T) {
	origin := newHoldOrigin(t)
	p := proxytest.Start(t, func(c *config.Config) { c.MaxHeaderBytes = 4096 })
	args := []string{"--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", origin.URL + "/big"}
	for i := range 40 {
		args = append(args, "-H", fmt.Sprintf("X-Big-%d: %s", i, strings.Repeat("b", 200)))
	}
	out := curlH2(t, p, args...)
	require.Equal(t, "2 431", out)
	require.Zero(t, origin.received.Load(), "the request was not forwarded")
}

// TestClientALPN: a TLS client in a tunnel is never refused over ALPN:
// HTTP/1.0 only (curl --http1.0), no ALPN at all, or only protocols the
// proxy does not speak; with --http2=false, curl --http2 gets HTTP/1.1.
func TestClientALPN(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	for _, tc := range []struct {
		http2 bool
		flag  string
		want  string
	}{
		{true, "--http1.0", "1.0 200"},
		{true, "--no-alpn", "1.1 200"},
		{true, "--http2", "2 200"},
		{false, "--http2", "1.1 200"},
	} {
		p := proxytest.Start(t, func(c *config.Config) { c.HTTP2 = tc.http2 })
		out := curlH2(t, p, tc.flag, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", origin.URL+"/alpn")
		if out == "1 200" {
			out = "1.0 200" // curl 7.88 writes HTTP/1.0 as "1"
		}
		require.Equal(t, tc.want, out, "%s with --http2=%v", tc.flag, tc.http2)
		p.Stop()
	}
	p := proxytest.Start(t, nil)
	tun, err := dialConnect(t.Context(), p.URL.Host, origin.Listener.Addr().String())
	require.NoError(t, err)
	defer tun.Close()
	tc := tls.Client(tun, &tls.Config{RootCAs: p.CAPool, ServerName: "127.0.0.1", NextProtos: []string{"spdy/3.1", "acme-tls/1"}})
	require.NoError(t, tc.Handshake(), "offers the proxy does not speak are no reason to fail")
	require.Empty(t, tc.ConnectionState().NegotiatedProtocol)
}
