package e2e

// Which headers are passed on. To the origin: never the crawler's
// Warcprox-Meta, nor an h2c upgrade. To the client: the origin's trailers,
// but neither its Strict-Transport-Security nor its own Warcprox-Meta,
// which only the WARC record keeps.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestWarcproxMetaNotForwarded: the crawler's Warcprox-Meta header reaches
// neither the origin nor the request record.
func TestWarcproxMetaNotForwarded(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Warcprox-Meta")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	req, _ := http.NewRequest("GET", origin.URL+"/meta", nil)
	req.Header.Set("Warcprox-Meta", `{"warc-prefix":"job-42","stats":{"buckets":["secret-bucket"]}}`)
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, <-got, "the origin received the crawler's Warcprox-Meta header")
}

// TestH2CUpgradeNotForwarded: an "Upgrade: h2c" request is not passed on
// (HTTP/2 on a spliced connection would not be recorded).
func TestH2CUpgradeNotForwarded(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Upgrade")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	req, _ := http.NewRequest("GET", origin.URL+"/page", nil)
	req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
	req.Header.Set("Upgrade", "h2c")
	req.Header.Set("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, "h2c", <-got, "h2c upgrade forwarded: an accepting origin's answer would bypass the recorder")
}

// TestHSTSNotPassedToClient: warcprox drops Strict-Transport-Security
// from the response its client gets (mitmproxy.py
// ProxyingRecordingHTTPResponse.begin, "to avoid some problems with HSTS
// when browsing through warcprox"): a browser that kept it would from then
// on turn the site's http:// links into https:// by itself, so the crawl
// would never capture them as they are. The WARC record keeps the header.
func TestHSTSNotPassedToClient(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		fmt.Fprint(w, "secure page")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	resp, err := p.Client().Get(origin.URL + "/hsts")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "secure page", string(b))
	require.Empty(t, resp.Header.Values("Strict-Transport-Security"))
	p.Stop()

	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	rec, ok := res[origin.URL+"/hsts"]
	require.True(t, ok, "response record for %s/hsts", origin.URL)
	require.Contains(t, string(rec.Block), "Strict-Transport-Security: max-age=31536000; includeSubDomains\r\n")
}

// TestTrailersPassedToClient: warcprox relays the origin's chunked
// body as it came, trailer fields included (mitmproxy.py
// ProxyingRecorder tees the raw bytes to the client). Ours re-chunks
// through net/http and passes the trailers on after the body; the record
// holds the origin's bytes.
func TestTrailersPassedToClient(t *testing.T) {
	const final = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n" +
		"Trailer: X-Checksum\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: abc123\r\n\r\n"
	o := newRawOrigin(t, false, map[string]rawResponse{"/t": {final: final}})
	p := proxytest.Start(t, nil)
	resp, err := p.Client().Get("http://" + o.addr() + "/t")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "hello", string(b))
	require.Equal(t, "abc123", resp.Trailer.Get("X-Checksum"))
	p.Stop()

	rec, ok := byType(t, warccheck.Dir(t, p.Dir), "response")["http://"+o.addr()+"/t"]
	require.True(t, ok)
	require.Equal(t, final, string(rec.Block))
}

// TestOriginWarcproxMetaNotPassedToClient: a site cannot speak for the
// proxy. Its own Warcprox-Meta (here a fake 420 "reached-limit", which
// makes Brozzler end the crawl) stays in the record and never reaches the
// crawler, plain or intercepted; the proxy's own capture-metadata still
// does.
func TestOriginWarcproxMetaNotPassedToClient(t *testing.T) {
	const fake = `{"reached-limit":{"job1/total/urls":1},"stats":{}}`
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Warcprox-Meta", fake)
		w.WriteHeader(420)
		// A payload per URL: no revisits, whenever the dedup save lands.
		fmt.Fprint(w, "Reached limit at ", r.URL.Path, ", tls ", r.TLS != nil)
	})
	plain := httptest.NewServer(h)
	defer plain.Close()
	secure := httptest.NewTLSServer(h)
	defer secure.Close()
	p := proxytest.Start(t, nil)
	for _, base := range []string{plain.URL, secure.URL} {
		for _, accept := range []bool{false, true} {
			u := fmt.Sprintf("%s/spoof-%v", base, accept)
			req, err := http.NewRequest(http.MethodGet, u, nil)
			require.NoError(t, err)
			if accept {
				req.Header.Set("Warcprox-Meta", `{"accept":["capture-metadata"]}`)
			}
			resp, err := p.Client().Do(req)
			require.NoError(t, err)
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, 420, resp.StatusCode, u)
			got := resp.Header.Values("Warcprox-Meta")
			if !accept {
				require.Empty(t, got, u)
				continue
			}
			require.Len(t, got, 1, "%s: %q", u, got)
			require.Contains(t, got[0], `"capture-metadata"`, u)
			require.NotContains(t, got[0], "reached-limit", u)
		}
	}
	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	for _, u := range []string{plain.URL + "/spoof-false", plain.URL + "/spoof-true",
		secure.URL + "/spoof-false", secure.URL + "/spoof-true"} {
		rec, ok := res[u]
		require.True(t, ok, "response record for %s", u)
		require.Contains(t, string(rec.Block), "Warcprox-Meta: "+fake+"\r\n", u)
	}
}
