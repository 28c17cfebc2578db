package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

func gzipped(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return b.String()
}

// wireCases are responses whose exact bytes must reach the WARC.
func wireCases() (map[string]rawResponse, map[string]string) {
	gz := gzipped(strings.Repeat("compressible text ", 200))
	half := len(gz) / 2
	responses := map[string]rawResponse{
		"/odd-headers": {final: "HTTP/1.1 200 OK\r\nx-ODD-case: a\r\nZeta: 1\r\nalpha: 2\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello"},
		"/chunked-ext": {final: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n6;x\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"},
		"/gzip-chunked": {final: "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n%X\r\n%s\r\n0\r\n\r\n", half, gz[:half], len(gz)-half, gz[half:])},
		"/continue":   {interim: "HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n", final: "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"},
		"/http10":     {final: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until close", close: true},
		"/no-content": {final: "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n"},
	}
	payloads := map[string]string{
		"/odd-headers":  "hello",
		"/chunked-ext":  "hello world",
		"/gzip-chunked": gz,
		"/continue":     "ok",
		"/http10":       "read until close",
		"/no-content":   "",
	}
	return responses, payloads
}

// TestWireExactRecords sends requests through the proxy to an origin that
// writes hand-made bytes, over plain proxying, a CONNECT tunnel carrying
// plain HTTP, and a MITM'd TLS tunnel, and checks that each response record
// holds exactly those bytes and that the payload digest is over the
// de-chunked, still content-encoded body.
func TestWireExactRecords(t *testing.T) {
	for _, mode := range []string{"plain", "connect-http", "mitm-tls"} {
		t.Run(mode, func(t *testing.T) {
			responses, payloads := wireCases()
			origin := newRawOrigin(t, mode == "mitm-tls", responses)
			p := proxytest.Start(t, nil)
			scheme := "http"
			if mode == "mitm-tls" {
				scheme = "https"
			}
			base := scheme + "://" + origin.addr()
			client := p.Client()
			if mode == "connect-http" {
				client = connectClient(t, p, origin.addr())
			}
			client.Transport.(*http.Transport).ExpectContinueTimeout = 5 * time.Second

			for path, want := range payloads {
				var req *http.Request
				if path == "/continue" {
					req, _ = http.NewRequest(http.MethodPost, base+path, strings.NewReader("request body"))
					req.Header.Set("Expect", "100-continue")
				} else {
					req, _ = http.NewRequest(http.MethodGet, base+path, nil)
				}
				resp, err := client.Do(req)
				require.NoError(t, err, path)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err, path)
				require.Equal(t, want, string(body), path)
			}
			p.Stop()

			recs := warccheck.Dir(t, p.Dir)
			responsesByURI := byType(t, recs, "response")
			requestsByURI := byType(t, recs, "request")
			require.Len(t, responsesByURI, len(payloads))
			for path, want := range payloads {
				uri := base + path
				rec, ok := responsesByURI[uri]
				require.True(t, ok, "no response record for %s", uri)
				require.Equal(t, responses[path].final, string(rec.Block), "response block of %s", path)
				require.Equal(t, b32sha1([]byte(want)), rec.Header["WARC-Payload-Digest"], path)
				require.Equal(t, "127.0.0.1", rec.Header["WARC-IP-Address"])
				req, ok := requestsByURI[uri]
				require.True(t, ok, "no request record for %s", uri)
				require.Equal(t, rec.ID, req.Header["WARC-Concurrent-To"])
				require.WithinDuration(t, time.Now(), rec.Date, time.Minute)
			}
			// The request record holds what the origin received.
			origin.mu.Lock()
			defer origin.mu.Unlock()
			seen := map[string]bool{}
			for _, raw := range origin.requests {
				seen[string(raw)] = true
			}
			for _, req := range requestsByURI {
				require.True(t, seen[string(req.Block)], "request record of %s differs from the bytes the origin read:\n%q", req.TargetURI, req.Block)
			}
		})
	}
}

// connectClient returns a client that reaches addr through a CONNECT
// tunnel and speaks plain HTTP inside it.
func connectClient(t *testing.T, p *proxytest.Proxy, addr string) *http.Client {
	t.Helper()
	return &http.Client{
		Transport: &http.Transport{
			DisableCompression: true,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialConnect(ctx, p.URL.Host, addr)
			},
		},
		Timeout: 30 * time.Second,
	}
}
