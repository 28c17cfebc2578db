package e2e

// WARCPROX_WRITE_RECORD (and the deprecated PUTMETA): the request body
// becomes a record, plain or inside a tunnel, as warcprox 2.13.1 writes it,
// including for Brozzler's requests with "Host: N/A".

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestWriteRecord: WARCPROX_WRITE_RECORD (and the deprecated PUTMETA)
// writes the request body as a record of the given WARC-Type, 204.
func TestWriteRecord(t *testing.T) {
	p := proxytest.Start(t, nil)
	send := func(method, uri, warcType, contentType, meta, body string) (int, string) {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		defer c.Close()
		head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: example.com\r\nContent-Length: %d\r\n", method, uri, len(body))
		if warcType != "" {
			head += "WARC-Type: " + warcType + "\r\n"
		}
		if contentType != "" {
			head += "Content-Type: " + contentType + "\r\n"
		}
		if meta != "" {
			head += "Warcprox-Meta: " + meta + "\r\n"
		}
		_, _ = io.WriteString(c, head+"\r\n"+body)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufioReader(c), nil)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, _ := send("WARCPROX_WRITE_RECORD", "screenshot:https://example.com/", "resource", "image/png", "", "\x89PNG fake image")
	require.Equal(t, 204, status)
	status, _ = send("PUTMETA", "https://example.com/meta", "", "application/json", `{"warc-prefix": "meta"}`, `{"seed": "x"}`)
	require.Equal(t, 204, status)
	status, body := send("WARCPROX_WRITE_RECORD", "https://example.com/x", "", "text/plain", "", "no type")
	require.Equal(t, 400, status)
	require.Contains(t, body, "WARC-Type")
	status, _ = send("WARCPROX_WRITE_RECORD", "https://example.com/x", "bad type", "text/plain", "", "x")
	require.Equal(t, 400, status)
	status, _ = send("WARCPROX_WRITE_RECORD", "https://example.com/x", "resource", "text/plain", `{"warc-prefix": "-"}`, "x")
	require.Equal(t, 204, status, "accepted, not archived")
	p.Stop()

	recs := warccheck.Dir(t, p.Dir)
	var resource, metadata *warccheck.Record
	for i := range recs {
		switch recs[i].Type {
		case "resource":
			resource = &recs[i]
		case "metadata":
			metadata = &recs[i]
		}
	}
	require.NotNil(t, resource)
	require.Equal(t, "screenshot:https://example.com/", resource.TargetURI)
	require.Equal(t, "\x89PNG fake image", string(resource.Block))
	require.Equal(t, "image/png", resource.Header["Content-Type"])
	require.NotNil(t, metadata)
	require.True(t, strings.HasPrefix(metadata.File, "meta-"), metadata.File)
	require.Equal(t, `{"seed": "x"}`, string(metadata.Block))
}

// TestWriteRecordInTunnel: inside a MITM tunnel WARCPROX_WRITE_RECORD is
// written too (never forwarded to the origin), its URI completed with the
// tunnel's scheme and host.
func TestWriteRecordInTunnel(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	addr := strings.TrimPrefix(origin.URL, "https://")
	resp, _ := mitmGet(t, p, addr, "127.0.0.1", 0, "WARCPROX_WRITE_RECORD /shot HTTP/1.1\r\nHost: "+addr+
		"\r\nWARC-Type: resource\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc")
	require.Equal(t, 204, resp.StatusCode)
	require.Zero(t, hits.Load(), "not forwarded")
	p.Stop()
	var found bool
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "resource" {
			found = true
			require.Equal(t, origin.URL+"/shot", r.TargetURI)
			require.Equal(t, "abc", string(r.Block))
		}
	}
	require.True(t, found)
}

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

// TestBrozzlerWriteRecordHostNA: Brozzler sends every screenshot,
// thumbnail, video and yt-dlp metadata record with "Host: N/A", which
// warcprox ignores (warcproxy.py do_WARCPROX_WRITE_RECORD never looks at
// Host) and net/http would refuse with "400 Bad Request: malformed Host
// header" before the handler runs: each is archived, on a connection of its
// own and between fetches on a keep-alive one.
func TestBrozzlerWriteRecordHostNA(t *testing.T) {
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
	sendAll(t, c2, br, get,
		brozzlerWriteRecord("youtube-dl:https://example.com/", "metadata",
			"application/vnd.youtube-dl_formats+json;charset=utf-8", `{"warc-prefix":"job"}`, `{"formats":[]}`, true),
		get)
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

// TestWriteRecordPayloadDigest: warcprox gives a WARCPROX_WRITE_RECORD
// record a WARC-Payload-Digest equal to its block digest (warc.py
// build_warc_record: "no http headers, so block digest == payload digest"),
// and its crawl log line names that digest. CDX indexers take a record's
// digest column from WARC-Payload-Digest, so without it screenshots and
// videos would have none.
func TestWriteRecordPayloadDigest(t *testing.T) {
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

// TestWriteRecordWithoutHost: warcprox's API documentation (api.rst)
// shows WARCPROX_WRITE_RECORD sent by hand with ncat --crlf, as HTTP/1.1
// without a Host header, and answered 204. net/http refuses an HTTP/1.1
// request without Host ("400 Bad Request: missing required Host header")
// before any handler runs; the documented request is archived here as in
// warcprox, and so is the same request after a fetch on a keep-alive
// connection.
func TestWriteRecordWithoutHost(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	// api.rst's example, byte for byte as ncat --crlf sends it: the body
	// is the 27 characters and the CRLF that ends the heredoc's line.
	documented := "WARCPROX_WRITE_RECORD special://url/some?thing HTTP/1.1\r\n" +
		"WARC-Type: resource\r\nContent-type: text/plain;charset=utf-8\r\nContent-length: 29\r\n\r\n" +
		"i am a warc record payload!\r\n"
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	host := strings.TrimPrefix(origin.URL, "http://")
	sendAll(t, c, br, documented,
		fmt.Sprintf("GET %s/?body=page HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, host),
		strings.Replace(documented, "special://url/some?thing", "special://url/second", 1))
	p.Stop()

	resources := byType(t, warccheck.Dir(t, p.Dir), "resource")
	for _, uri := range []string{"special://url/some?thing", "special://url/second"} {
		rec, ok := resources[uri]
		require.True(t, ok, "no resource record for %s", uri)
		require.Equal(t, "i am a warc record payload!\r\n", string(rec.Block))
		require.Equal(t, "text/plain;charset=utf-8", rec.Header["Content-Type"])
	}
}

// sendAll sends each raw request on c in turn and reads its answer from
// br, which must be a success.
func sendAll(t *testing.T, c net.Conn, br *bufio.Reader, reqs ...string) {
	t.Helper()
	for i, req := range reqs {
		_, err := io.WriteString(c, req)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "request %d", i)
		body, _ := io.ReadAll(resp.Body)
		require.Less(t, resp.StatusCode, 300, "request %d: %s", i, body)
	}
}
