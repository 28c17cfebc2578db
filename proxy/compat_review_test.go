package proxy_test

// Compatibility with warcprox 2.13.1 and Brozzler, from a second review:
// each test shows a behaviour a Brozzler-driven crawl would notice, once
// different here (the test failed) and now as warcprox has it.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// brozzlerWriteRecord is what Brozzler's urllib sends for a screenshot
// (brozzler/worker.py _warcprox_write_record: headers Content-Type,
// WARC-Type and "Host: N/A", then the site's extra headers), byte for byte.
func brozzlerWriteRecord(uri, warcType, contentType, meta, body string, keepAlive bool) string {
	conn := "Connection: close\r\n"
	if keepAlive {
		conn = ""
	}
	return fmt.Sprintf("WARCPROX_WRITE_RECORD %s HTTP/1.1\r\nAccept-Encoding: identity\r\n"+
		"Content-Length: %d\r\nUser-Agent: Python-urllib/3.11\r\nContent-Type: %s\r\n"+
		"Warc-Type: %s\r\nHost: N/A\r\nWarcprox-Meta: %s\r\n%s\r\n%s",
		uri, len(body), contentType, warcType, meta, conn, body)
}

// TestReviewBrozzlerWriteRecordHostNA: Brozzler sends every screenshot,
// thumbnail, video and yt-dlp metadata record with "Host: N/A", which
// warcprox ignores (warcproxy.py do_WARCPROX_WRITE_RECORD never looks at
// Host) and net/http refused with "400 Bad Request: malformed Host header"
// before the handler ran, so none of them was archived.
func TestReviewBrozzlerWriteRecordHostNA(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)

	// One connection per record, as urllib does.
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, brozzlerWriteRecord("screenshot:https://example.com/", "resource",
		"image/jpeg", `{"warc-prefix":"job"}`, "\xff\xd8 jpeg", false))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(body))

	// A keep-alive client: a fetch, then a write-record, then a fetch, on
	// one connection.
	c2, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c2.Close()
	br := bufio.NewReader(c2)
	_ = c2.SetReadDeadline(time.Now().Add(10 * time.Second))
	get := fmt.Sprintf("GET %s/?body=page HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, strings.TrimPrefix(origin.URL, "http://"))
	for i, req := range []string{
		get,
		brozzlerWriteRecord("youtube-dl:https://example.com/", "metadata",
			"application/vnd.youtube-dl_formats+json;charset=utf-8", `{"warc-prefix":"job"}`, `{"formats":[]}`, true),
		get,
	} {
		_, err = io.WriteString(c2, req)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "request %d", i)
		body, _ := io.ReadAll(resp.Body)
		require.Less(t, resp.StatusCode, 300, "request %d: %s", i, body)
	}
	p.Stop()

	var uris []string
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "resource" || r.Type == "metadata" {
			require.True(t, strings.HasPrefix(r.File, "job-"), r.File)
			uris = append(uris, r.Type+" "+r.TargetURI)
		}
	}
	require.ElementsMatch(t, []string{"resource screenshot:https://example.com/", "metadata youtube-dl:https://example.com/"}, uris)
}

// TestReviewHSTSNotPassedToClient: warcprox drops Strict-Transport-Security
// from the response its client gets (mitmproxy.py
// ProxyingRecordingHTTPResponse.begin, "to avoid some problems with HSTS
// when browsing through warcprox"): a browser that kept it would from then
// on turn the site's http:// links into https:// by itself, so the crawl
// would never capture them as they are. The WARC record keeps the header.
func TestReviewHSTSNotPassedToClient(t *testing.T) {
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

// TestReviewWriteRecordPayloadDigest: warcprox gives a WARCPROX_WRITE_RECORD
// record a WARC-Payload-Digest equal to its block digest (warc.py
// build_warc_record: "no http headers, so block digest == payload digest"),
// and its crawl log line names that digest. CDX indexers take a record's
// digest column from WARC-Payload-Digest, so without it screenshots and
// videos had none.
func TestReviewWriteRecordPayloadDigest(t *testing.T) {
	p := proxytest.Start(t, nil)
	body := "\xff\xd8 a jpeg screenshot"
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "WARCPROX_WRITE_RECORD screenshot:https://example.com/ HTTP/1.1\r\nHost: example.com\r\n"+
		"Content-Type: image/jpeg\r\nWARC-Type: resource\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	p.Stop()

	rec, ok := byType(t, warccheck.Dir(t, p.Dir), "resource")["screenshot:https://example.com/"]
	require.True(t, ok)
	require.Equal(t, b32sha1([]byte(body)), rec.Header["WARC-Block-Digest"])
	require.Equal(t, b32sha1([]byte(body)), rec.Header["WARC-Payload-Digest"])
}

// TestReviewTrailersPassedToClient: warcprox relays the origin's chunked
// body as it came, trailer fields included (mitmproxy.py
// ProxyingRecorder tees the raw bytes to the client). Ours re-chunks
// through net/http and dropped them; the record always had them.
func TestReviewTrailersPassedToClient(t *testing.T) {
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
