package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestStaleUpstreamConnection: an origin that closes idle keep-alive
// connections quickly must not turn the next request into a 502.
func TestStaleUpstreamConnection(t *testing.T) {
	origin := httptest.NewUnstartedServer(echoOrigin())
	origin.Config.IdleTimeout = 50 * time.Millisecond
	origin.Start()
	defer origin.Close()
	p := proxytest.Start(t, nil)
	client := p.Client()
	for i := range 4 {
		resp, err := client.Get(fmt.Sprintf("%s/stale/%d", origin.URL, i))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "request %d", i)
		time.Sleep(200 * time.Millisecond)
	}
	p.Stop()
	require.Len(t, byType(t, warccheck.Dir(t, p.Dir), "response"), 4)
}

// TestNotArchived: --prefix - proxies without writing WARCs, and
// --method-filter archives only the listed methods.
func TestNotArchived(t *testing.T) {
	origin := httptest.NewServer(echoOrigin())
	defer origin.Close()

	p := proxytest.Start(t, func(c *config.Config) { c.Prefix = "-" })
	resp, err := p.Client().Get(origin.URL + "/x")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, `GET /x body="" te=[]`, string(body))
	p.Stop()
	files, _ := os.ReadDir(p.Dir)
	for _, f := range files {
		require.False(t, strings.Contains(f.Name(), ".warc"), "no WARC with --prefix -: %s", f.Name())
	}

	p = proxytest.Start(t, func(c *config.Config) { c.MethodFilter = []string{"POST"} })
	client := p.Client()
	resp, err = client.Get(origin.URL + "/get")
	require.NoError(t, err)
	resp.Body.Close()
	resp, err = client.Post(origin.URL+"/post", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	require.Len(t, res, 1)
	require.Contains(t, res, origin.URL+"/post")
}

// TestExpectContinueRefused: the origin answers a final status instead of
// 100 Continue; the client gets it and the body is never sent upstream.
func TestExpectContinueRefused(t *testing.T) {
	// An origin that answers right after the request head.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		_, _ = io.WriteString(c, "HTTP/1.1 417 Expectation Failed\r\nContent-Length: 2\r\n\r\nno")
		_ = c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
		m, _ := c.Read(buf[n:])
		got <- string(buf[:n+m])
	}()
	p := proxytest.Start(t, nil)
	client := p.Client()
	client.Transport.(*http.Transport).ExpectContinueTimeout = 5 * time.Second
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/upload", strings.NewReader("secret body"))
	req.Header.Set("Expect", "100-continue")
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 417, resp.StatusCode)
	require.Equal(t, "no", string(body))
	require.NotContains(t, <-got, "secret body", "the body is not sent after a final answer")
	p.Stop()
	reqs := byType(t, warccheck.Dir(t, p.Dir), "request")
	rec := reqs["http://"+ln.Addr().String()+"/upload"]
	require.Contains(t, string(rec.Block), "Expect: 100-continue")
	require.NotContains(t, string(rec.Block), "secret body", "the request record holds what was sent")
}

// TestSlowClientsTimedOut: request headers must arrive within
// --header-timeout, on plain connections and inside MITM tunnels.
func TestSlowClientsTimedOut(t *testing.T) {
	p := proxytest.Start(t, func(c *config.Config) { c.HeaderTimeout = 300 * time.Millisecond })
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()

	plain, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer plain.Close()
	_, _ = io.WriteString(plain, "GET http://127.0.0.1/ HTTP/1.1\r\nHost: 1")
	start := time.Now()
	_ = plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(plain)
	require.NoError(t, err, "the proxy closes the connection")
	require.Less(t, time.Since(start), 4*time.Second)

	tunnel, err := dialConnect(t.Context(), p.URL.Host, strings.TrimPrefix(origin.URL, "https://"))
	require.NoError(t, err)
	defer tunnel.Close()
	tc := tls.Client(tunnel, &tls.Config{RootCAs: p.CAPool, ServerName: "127.0.0.1"})
	require.NoError(t, tc.Handshake())
	_, _ = io.WriteString(tc, "GET / HTTP/1.1\r\nHost: 1")
	start = time.Now()
	_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(tc)
	require.Less(t, time.Since(start), 4*time.Second, "closed inside the tunnel too")

	// A tunnel whose client never starts TLS nor HTTP is closed as well.
	idle, err := dialConnect(t.Context(), p.URL.Host, strings.TrimPrefix(origin.URL, "https://"))
	require.NoError(t, err)
	defer idle.Close()
	start = time.Now()
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(idle)
	require.Less(t, time.Since(start), 4*time.Second)
}

// TestMalformedRequests get a 400, and the proxy keeps serving.
func TestMalformedRequests(t *testing.T) {
	origin := httptest.NewServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, nil)
	for _, raw := range []string{
		"GARBAGE\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nBad Header Line\r\n\r\n",
		"GET ftp://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
		"GET http:/// HTTP/1.1\r\nHost: \r\n\r\n",
		// An IDN host in UTF-8 rather than in its xn-- form, as net/http
		// refuses it in the Host header.
		"GET http://b\xc3\xbccher.example/ HTTP/1.1\r\nHost: xn--bcher-kva.example\r\n\r\n",
	} {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		_, _ = io.WriteString(c, raw)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufioReader(c), nil)
		require.NoError(t, err, "%q", raw)
		require.Equal(t, 400, resp.StatusCode, "%q", raw)
		c.Close()
	}
	resp, err := p.Client().Get(origin.URL + "/ok")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// The ones net/http rejected before the proxy's handler are counted
	// (and logged) too.
	require.Equal(t, float64(2), p.Status(t)["client_errors"])
}

// TestHTTP10ClientWithoutHost: inside a tunnel an HTTP/1.0 client may omit
// Host; the origin still gets one, naming the CONNECT target.
func TestHTTP10ClientWithoutHost(t *testing.T) {
	origin := newRawOrigin(t, false, map[string]rawResponse{
		"/old": {final: "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold"},
	})
	p := proxytest.Start(t, nil)
	c, err := dialConnect(t.Context(), p.URL.Host, origin.addr())
	require.NoError(t, err)
	defer c.Close()
	_, _ = io.WriteString(c, "GET /old HTTP/1.0\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufioReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, "old", string(body))
	origin.mu.Lock()
	require.Contains(t, string(origin.requests[0]), "Host: "+origin.addr()+"\r\n")
	origin.mu.Unlock()
}

// TestRecordFormats: the WARC options reach the records: WARC/1.1,
// sha256 in hex, no gzip; and the defaults WARC/1.0, sha1 base32, gzip.
func TestRecordFormats(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	cases := []struct {
		name   string
		mutate func(*config.Config)
		ext    string
		digest string
	}{
		{"defaults", nil, ".warc.gz", "sha1:"},
		{"1.1-sha256-hex-plain", func(c *config.Config) {
			c.WARCVersion = "1.1"
			c.DigestAlgorithm = "sha256"
			c.Base32 = false
			c.Compression = "none"
		}, ".warc", "sha256:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := proxytest.Start(t, tc.mutate)
			resp, err := p.Client().Get(origin.URL + "/format")
			require.NoError(t, err)
			resp.Body.Close()
			p.Stop()
			files, err := os.ReadDir(p.Dir)
			require.NoError(t, err)
			var warcs []string
			for _, f := range files {
				if strings.HasSuffix(f.Name(), ".warc") || strings.HasSuffix(f.Name(), ".warc.gz") {
					warcs = append(warcs, f.Name())
				}
			}
			require.Len(t, warcs, 1)
			require.True(t, strings.HasSuffix(warcs[0], tc.ext), warcs[0])
			require.True(t, strings.HasPrefix(warcs[0], "WARCPROX-"), warcs[0])
			recs := warccheck.Dir(t, p.Dir)
			res := byType(t, recs, "response")[origin.URL+"/format"]
			require.True(t, strings.HasPrefix(res.Header["WARC-Payload-Digest"], tc.digest), res.Header["WARC-Payload-Digest"])
			require.True(t, strings.HasPrefix(res.Header["WARC-Block-Digest"], tc.digest))
			if tc.name != "defaults" {
				require.Len(t, strings.TrimPrefix(res.Header["WARC-Block-Digest"], "sha256:"), 64, "hex")
				raw, err := os.ReadFile(filepath.Join(p.Dir, warcs[0]))
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(string(raw), "WARC/1.1\r\n"))
				require.NotContains(t, string(raw), "WARC/1.0")
			}
		})
	}
}

// TestConnectThenHalfClose: a client that sends CONNECT and its request in
// one go and half-closes at once gets its tunnel: the CONNECT's dial does not
// depend on the request context, which the half-close ends. (The request in
// the tunnel then counts as abandoned, as in Squid's default.)
func TestConnectThenHalfClose(t *testing.T) {
	origin := newRawOrigin(t, false, map[string]rawResponse{
		"/page": {final: "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npage"},
	})
	p := proxytest.Start(t, nil)
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %[1]s HTTP/1.1\r\nHost: %[1]s\r\n\r\nGET /page HTTP/1.1\r\nHost: %[1]s\r\nConnection: close\r\n\r\n", origin.addr())
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	all, err := io.ReadAll(c)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(all), "HTTP/1.1 200 Connection established\r\n"), "%q", all)
}

// TestBadConnectAndHTTP2Preface: CONNECT without a port is a 400 (no
// guessing, no DNS lookup); an HTTP/2 preface gets a 505 that says why.
func TestBadConnectAndHTTP2Preface(t *testing.T) {
	p := proxytest.Start(t, nil)
	for _, tc := range []struct {
		raw    string
		status int
	}{
		{"CONNECT nohostport HTTP/1.1\r\nHost: nohostport\r\n\r\n", 400},
		{"CONNECT ../x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
	} {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		_, _ = io.WriteString(c, tc.raw)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufioReader(c), nil)
		c.Close()
		if tc.status == 505 && err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		require.NoError(t, err, "%q", tc.raw)
		require.Equal(t, tc.status, resp.StatusCode, "%q", tc.raw)
	}
}

// TestClientGoneWhileWaitingForHead: when the client hangs up while the
// proxy waits for the response head, the origin connection is closed at
// once.
func TestClientGoneWhileWaitingForHead(t *testing.T) {
	closed := make(chan time.Duration, 1)
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := br.ReadByte() // EOF when the proxy closes its side
		if err == io.EOF {
			closed <- time.Since(start)
		} else {
			closed <- -1
		}
	})
	p := proxytest.Start(t, nil)
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	fmt.Fprintf(c, "GET http://%s/x HTTP/1.1\r\nHost: %s\r\n\r\n", origin.addr(), origin.addr())
	time.Sleep(300 * time.Millisecond)
	c.Close()
	d := <-closed
	require.True(t, d >= 0, "the proxy still holds the origin connection 5 s after its client left")
}
