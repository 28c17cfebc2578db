package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// rawExchange writes raw on a fresh connection to the proxy and reads one
// response (deadline 10 s).
func rawExchange(t *testing.T, p *proxytest.Proxy, raw string) (*http.Response, string, error) {
	t.Helper()
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_, _ = io.WriteString(c, raw)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req *http.Request
	if strings.HasPrefix(raw, "CONNECT ") {
		req = &http.Request{Method: http.MethodConnect}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return nil, "", err
	}
	if req != nil && resp.StatusCode == http.StatusOK {
		return resp, "", nil // a tunnel: no body
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body), nil
}

// A WARCPROX_WRITE_RECORD whose client announces a body and stalls is cut
// after --socket-timeout (408), so it cannot hold its slot.
func TestHostileWriteRecordStalledBody(t *testing.T) {
	p := proxytest.Start(t, func(c *config.Config) { c.SocketTimeout = time.Second })
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "WARCPROX_WRITE_RECORD screenshot:http://example.com/ HTTP/1.1\r\nHost: example.com\r\nWARC-Type: resource\r\nContent-Type: image/png\r\nContent-Length: 100\r\n\r\n0123456789")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "no answer 10 s after the body stalled (--socket-timeout 1s)")
	require.Equal(t, 408, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(body), "the record's body stalled", "the answer says why")
}

// An HTTP/2 preface inside a CONNECT tunnel, plain and TLS, gets 505 as on
// the outer port: never forwarded as "PRI * HTTP/1.1" nor recorded.
func TestHostileH2PrefaceInTunnel(t *testing.T) {
	origin := newRawOrigin(t, false, nil)
	p := proxytest.Start(t, nil)
	tun, err := dialConnect(t.Context(), p.URL.Host, origin.addr())
	require.NoError(t, err)
	defer tun.Close()
	_, _ = io.WriteString(tun, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	_ = tun.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(tun), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	requirePrefaceRefused(t, p, origin, resp, string(body))
}

// requirePrefaceRefused: an HTTP/2 preface was answered 505, never reached
// the origin and was not recorded.
func requirePrefaceRefused(t *testing.T, p *proxytest.Proxy, origin *rawOrigin, resp *http.Response, body string) {
	t.Helper()
	origin.mu.Lock()
	sent := len(origin.requests)
	origin.mu.Unlock()
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	require.Equal(t, 505, resp.StatusCode, "body %q", body)
	require.Zero(t, sent, "the preface was forwarded to the origin")
	require.Empty(t, byType(t, recs, "response"), "the preface was recorded")
}

func TestHostileH2PrefaceInTLSTunnel(t *testing.T) {
	origin := newRawOrigin(t, true, nil)
	p := proxytest.Start(t, nil)
	resp, body := mitmGet(t, p, origin.addr(), "127.0.0.1", 0, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	requirePrefaceRefused(t, p, origin, resp, body)
}

// CONNECT to the proxy's own port under other names (0.0.0.0, which
// connects to the loopback listener, and a zero-padded port) is refused,
// as 127.0.0.1:PORT is.
func TestHostileConnectToSelfAliases(t *testing.T) {
	p := proxytest.Start(t, nil)
	_, port, _ := net.SplitHostPort(p.URL.Host)
	for _, target := range []string{"0.0.0.0:" + port, "127.0.0.1:0" + port} {
		t.Run(target, func(t *testing.T) {
			resp, body, err := rawExchange(t, p, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
			require.NoError(t, err, target)
			require.Equal(t, 403, resp.StatusCode, "%s: %s", target, body)
		})
	}
}

// Ports out of range are the client's error (400), not a 502
// "upstream error".
func TestHostileBadPorts(t *testing.T) {
	p := proxytest.Start(t, nil)
	for _, raw := range []string{
		"CONNECT 127.0.0.1:99999 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET http://127.0.0.1:99999/ HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n\r\n",
	} {
		resp, body, err := rawExchange(t, p, raw)
		require.NoError(t, err, raw)
		require.Equal(t, 400, resp.StatusCode, "%q: %s", raw, body)
	}
}

// Raw bytes >= 0x80 in a request target (net/http lets them through) are
// percent-encoded in WARC-Target-URI, which must be a URI, so that both
// independent readers agree on the record's target.
func TestHostileNonUTF8TargetURI(t *testing.T) {
	o := newRawOrigin(t, false, nil)
	p := proxytest.Start(t, nil)
	resp, _, err := rawExchange(t, p, "GET http://"+o.addr()+"/\xff\xfe HTTP/1.1\r\nHost: "+o.addr()+"\r\n\r\n")
	require.NoError(t, err)
	require.Equal(t, 404, resp.StatusCode) // the origin's answer
	p.Stop()
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" {
			require.Equal(t, "http://"+o.addr()+"/%FF%FE", r.TargetURI)
		}
	}
}

// An HTTP/1.0 response with Transfer-Encoding: chunked is faulty framing
// (RFC 9112 6.1): net/http would pass the chunks raw while WARC readers
// de-chunk, so no record could verify. It gets a 502 and no record.
func TestHostileHTTP10ChunkedResponse(t *testing.T) {
	o := newRawOrigin(t, false, map[string]rawResponse{
		"/10te": {final: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHELLO\r\n0\r\n\r\n", close: true},
	})
	p := proxytest.Start(t, nil)
	resp, err := p.Client().Get("http://" + o.addr() + "/10te")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("client got %s %q", resp.Status, b)
	}
	p.Stop()
	warccheck.Dir(t, p.Dir)
}

// blackHole returns a 127.0.0.1 address whose accept queue is full, so
// that new connections to it hang in SYN-SENT.
func blackHole(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 3 { // fill the accept queue
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			t.Cleanup(func() { c.Close() })
		}
	}
	return addr
}

// Clients that CONNECT to a black hole and hang up at once free their
// --max-conns slots at once, not after --socket-timeout.
func TestHostileConnectBlackHoleClientGone(t *testing.T) {
	hole := blackHole(t)
	p := proxytest.Start(t, func(c *config.Config) {
		c.MaxConns = 4
		c.SocketTimeout = 20 * time.Second
		c.ConnWaitTimeout = 2 * time.Second
		// /status on a listener of its own: reading it takes no slot and
		// is not counted.
		c.MetricsAddress = "127.0.0.1:0"
	})
	for range 4 {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %[1]s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", hole)
		time.Sleep(50 * time.Millisecond)
		c.Close()
	}
	require.Eventually(t, func() bool {
		return p.Status(t)["connections_active"] == float64(0)
	}, 10*time.Second, 50*time.Millisecond, "slots still held by CONNECTs whose clients left")
}

// Stopping the proxy while a CONNECT tunnel waits for its first byte
// closes the hijacked connection, its origin connection and goroutine.
func TestHostileStopWhileTunnelSilent(t *testing.T) {
	o := newRawOrigin(t, false, nil)
	p := proxytest.Start(t, nil) // --header-timeout 30 s
	var tuns []net.Conn
	for range 3 {
		tun, err := dialConnect(t.Context(), p.URL.Host, o.addr())
		require.NoError(t, err)
		tuns = append(tuns, tun)
	}
	p.Stop()
	for _, tun := range tuns {
		_ = tun.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(tun)
		require.NoError(t, err, "the tunnel is closed by the shutdown")
		tun.Close()
	}
}

// WARCPROX_WRITE_RECORD with a target that is not an absolute URI, or
// without a Content-Length, gets 400 and writes nothing.
func TestHostileWriteRecordBadTarget(t *testing.T) {
	p := proxytest.Start(t, nil)
	for _, tc := range []struct{ uri, length string }{
		{"*", "Content-Length: 1\r\n"},
		{"/relative", "Content-Length: 1\r\n"},
		{"http://example.com/no-length", ""},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			resp, body, err := rawExchange(t, p, "WARCPROX_WRITE_RECORD "+tc.uri+" HTTP/1.1\r\nHost: x\r\nWARC-Type: resource\r\nContent-Type: text/plain\r\n"+tc.length+"\r\na")
			require.NoError(t, err)
			require.Equal(t, 400, resp.StatusCode, "%s: %s", tc.uri, body)
		})
	}
	p.Stop()
	warccheck.Dir(t, p.Dir)
}

// TestHostileManyBuckets: a Warcprox-Meta header (up to
// --max-header-bytes, 4 MiB) may name a hundred thousand stats buckets and
// as many dedup buckets. Each is counted, a limit on the last one holds,
// and the proxy stops within its --shutdown-timeout with every count and
// dedup entry stored. The stats buckets were compared each with all before
// it, twice (about 40 s per request here, minutes at 4 MiB, while the
// client waited), and the embedded database was written in map order,
// which bbolt takes quadratic time for: a minute and more to store them,
// past the shutdown budget, dedup entries dropped.
func TestHostileManyBuckets(t *testing.T) {
	origin := contentOrigin(t, false)
	// A budget that storing them all fits in many times over, even on a
	// loaded machine, and that the quadratic writes did not.
	p := proxytest.Start(t, func(c *config.Config) { c.ShutdownTimeout = 60 * time.Second })
	c := p.Client()
	const n = 100_000
	names := make([]string, n)
	dedup := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf(`"b%d"`, i)
		dedup[i] = names[i] + `:"rw"`
	}
	last := fmt.Sprintf("b%d", n-1)
	meta := `{"stats": {"buckets": [` + strings.Join(names, ",") + `]}, "dedup-buckets": {` +
		strings.Join(dedup, ",") + `}, "limits": {"` + last + `/total/urls": 1}}`
	for i, want := range []int{http.StatusOK, 420} {
		resp, body := fetch(t, c, fmt.Sprintf("%s/many/%d?body=many", origin.URL, i), meta)
		require.Equal(t, want, resp.StatusCode, body)
		if want == 420 {
			require.Contains(t, resp.Header.Get("Warcprox-Meta"), `"`+last+`":{"bucket":"`+last+`","total":{"urls":1,`)
		}
	}
	p.Stop() // fails the test if counts or dedup entries were not stored in time
}
