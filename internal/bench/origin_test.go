package bench

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0}, {in: "512", want: 512}, {in: "16KB", want: 16 << 10},
		{in: "16k", want: 16 << 10}, {in: "4MB", want: 4 << 20}, {in: "1GiB", want: 1 << 30},
		{in: "7B", want: 7}, {in: "", bad: true}, {in: "-1", bad: true}, {in: "1TB", bad: true},
		{in: "99999999999GB", bad: true},
	} {
		got, err := ParseSize(c.in)
		if c.bad {
			require.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

// rawClient does not decompress, so the test sees the body as sent.
func rawClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true}}
}

func TestOriginEndpoints(t *testing.T) {
	srv := httptest.NewServer(NewOrigin())
	defer srv.Close()
	client := rawClient()
	defer client.CloseIdleConnections()

	for _, c := range []struct {
		name, method, path string
		status             int
		length             int64 // decoded body length; -1: don't check
		chunked, gzipped   bool
		contentLength      bool // Content-Length header sent
		maxCompressed      int  // if > 0, the wire body is at most this
	}{
		{name: "bytes", method: "GET", path: "/bytes/1000", status: 200, length: 1000, contentLength: true},
		{name: "bytes suffix", method: "GET", path: "/bytes/16KB", status: 200, length: 16 << 10, contentLength: true},
		{name: "bytes larger than buffer", method: "GET", path: "/bytes/5MB", status: 200, length: 5 << 20, contentLength: true},
		{name: "bytes zero", method: "GET", path: "/bytes/0", status: 200, length: 0, contentLength: true},
		{name: "bytes head", method: "HEAD", path: "/bytes/4MB", status: 200, length: 0, contentLength: true},
		{name: "bytes gzip", method: "GET", path: "/bytes/64KB?gzip=1", status: 200, length: 64 << 10, gzipped: true, contentLength: true},
		{name: "bytes gzip text", method: "GET", path: "/bytes/1MB?gzip=1&text=1", status: 200, length: 1 << 20, gzipped: true, contentLength: true, maxCompressed: 1 << 20 / 3},
		{name: "stream", method: "GET", path: "/stream/100/7", status: 200, length: 700, chunked: true},
		{name: "stream suffix", method: "GET", path: "/stream/4KB/3", status: 200, length: 12 << 10, chunked: true},
		{name: "stream gzip text", method: "GET", path: "/stream/64KB/4?gzip=1&text=1", status: 200, length: 256 << 10, chunked: true, gzipped: true, maxCompressed: 256 << 10 / 3},
		{name: "delay", method: "GET", path: "/delay/20", status: 200, length: 3, contentLength: true},
		{name: "status 500", method: "GET", path: "/status/500", status: 500, length: -1, contentLength: true},
		{name: "status 404", method: "GET", path: "/status/404", status: 404, length: -1, contentLength: true},
		{name: "status 204", method: "GET", path: "/status/204", status: 204, length: 0},
		{name: "bad size", method: "GET", path: "/bytes/lots", status: 400, length: -1},
		{name: "bad chunk", method: "GET", path: "/stream/0/1", status: 400, length: -1},
		{name: "bad delay", method: "GET", path: "/delay/999999", status: 400, length: -1},
		{name: "bad status", method: "GET", path: "/status/99", status: 400, length: -1},
		{name: "unknown", method: "GET", path: "/nothing", status: 404, length: -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, srv.URL+c.path, nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := client.Do(req)
			require.NoError(t, err)
			wire, err := io.ReadAll(resp.Body)
			require.NoError(t, resp.Body.Close())
			require.NoError(t, err)
			require.Equal(t, c.status, resp.StatusCode)
			if c.status != 200 {
				if c.status != 204 {
					require.NotEmpty(t, wire, "an error or status body explains itself")
				}
				return
			}
			if c.chunked {
				require.Equal(t, []string{"chunked"}, resp.TransferEncoding, "streamed with chunked encoding")
			} else {
				require.Empty(t, resp.TransferEncoding)
			}
			if c.contentLength {
				require.NotEmpty(t, resp.Header.Get("Content-Length"))
				if c.method != "HEAD" {
					require.Equal(t, int64(len(wire)), resp.ContentLength)
				}
			}
			body := wire
			if c.gzipped {
				require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
				zr, err := gzip.NewReader(bytes.NewReader(wire))
				require.NoError(t, err, "the body is gzip")
				body, err = io.ReadAll(zr)
				require.NoError(t, err, "the body is whole gzip")
			} else {
				require.Empty(t, resp.Header.Get("Content-Encoding"))
			}
			if c.length >= 0 {
				require.Equal(t, c.length, int64(len(body)))
			}
			if c.maxCompressed > 0 {
				require.LessOrEqual(t, len(wire), c.maxCompressed, "text-like bodies compress well")
			}
			if c.name == "delay" {
				require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "the answer waits for the delay")
			}
		})
	}
}

// TestOriginBodies checks the kinds of body: random ones do not compress,
// text ones compress about 4:1, and successive bodies differ.
func TestOriginBodies(t *testing.T) {
	srv := httptest.NewServer(NewOrigin())
	defer srv.Close()
	get := func(path string) []byte {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return b
	}
	gzLen := func(b []byte) int {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Len()
	}
	random := get("/bytes/256KB")
	require.Greater(t, gzLen(random), len(random)*99/100, "random bodies are incompressible")
	text := get("/bytes/256KB?text=1")
	ratio := float64(len(text)) / float64(gzLen(text))
	require.InDelta(t, 4, ratio, 1, "text bodies compress about 4:1")
	require.NotEqual(t, random, get("/bytes/256KB"), "successive bodies start at different offsets")
}

func TestListenOriginTLS(t *testing.T) {
	srv, err := ListenOrigin(OriginConfig{Address: "127.0.0.1"}, discardLogger())
	require.NoError(t, err)
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	urls := srv.URLs()
	require.Len(t, urls, 2)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Cert.Leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, u := range urls {
		resp, err := client.Get(u + "/bytes/10")
		require.NoError(t, err, u)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Len(t, b, 10)
		require.Equal(t, "HTTP/1.1", resp.Proto)
	}
	client.CloseIdleConnections()
	cancel()
	require.NoError(t, <-done)
}

// An origin speaks HTTP/2 to a client that offers it only when asked to
// (warcbench origin --http2): by default it stays HTTP/1.1, as the proxy's
// upstream leg does.
func TestListenOriginHTTP2(t *testing.T) {
	for _, offer := range []bool{false, true} {
		srv, err := ListenOrigin(OriginConfig{Address: "127.0.0.1", TLSPort: 0, HTTP2: offer}, discardLogger())
		require.NoError(t, err)
		ctx, cancel := contextWithCancel(t)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		pool := x509.NewCertPool()
		pool.AddCert(srv.Cert.Leaf)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
		resp, err := client.Get(srv.URLs()[1] + "/bytes/16KB")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Len(t, b, 16<<10)
		want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[offer]
		require.Equal(t, want, resp.Proto, "origin with HTTP2=%v", offer)
		client.CloseIdleConnections()
		cancel()
		require.NoError(t, <-done)
	}
}
