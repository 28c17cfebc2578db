package e2e

// Compatibility with warcprox 2.13.1 (internetarchive/warcprox): the crawl
// log, /status and the order of limits and blocks, as a Brozzler-style
// crawler or an archivist reading them expects, each checked against what
// warcprox's code and tests do.

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// crawlLogPath is warcprox's crawl log file name for a prefix.
func crawlLogPath(p *proxytest.Proxy, dir, prefix string) string {
	host, _ := os.Hostname()
	short, _, _ := strings.Cut(host, ".")
	return filepath.Join(dir, prefix+"-"+short+"-"+strconv.Itoa(p.App.Addr().Port)+".log")
}

// extraKeys returns the sorted keys of a crawl log line's extra-info column.
func extraKeys(t *testing.T, line string) []string {
	t.Helper()
	fields := strings.Fields(line)
	require.Len(t, fields, 13, line)
	var extra map[string]any
	require.NoError(t, json.Unmarshal([]byte(fields[12]), &extra), line)
	var keys []string
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestCompatCrawlLogNotArchivedPayloadDigest: warcprox's crawl log gives
// the payload digest of every fetch, archived or not (crawl_log.py notify:
// payload_digest comes from recorded_url.payload_digest whenever there is a
// response_recorder). test_crawl_log checks it for a HEAD request that
// --method-filter GET keeps out of the WARC: column 10 is the digest of the
// empty payload, for anything not archived (--method-filter,
// warc-prefix "-") as for what is.
func TestCompatCrawlLogNotArchivedPayloadDigest(t *testing.T) {
	origin := contentOrigin(t, false)
	dir := t.TempDir()
	p := proxytest.Start(t, func(c *config.Config) {
		c.CrawlLogDir = dir
		c.MethodFilter = []string{"GET"}
	})
	c := p.Client()

	// HEAD, not archived because of --method-filter GET (test_crawl_log_3).
	req, err := http.NewRequest(http.MethodHead, origin.URL+"/b/cc", nil)
	require.NoError(t, err)
	req.Header.Set("Warcprox-Meta", `{"warc-prefix": "test_crawl_log_3"}`)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// GET with warc-prefix "-": fetched, not archived.
	body := "payload fetched but not archived"
	fetch(t, c, origin.URL+"/dash?body="+strings.ReplaceAll(body, " ", "%20"), `{"warc-prefix": "-"}`)
	p.Settle()
	p.Stop()

	lines := readLines(t, crawlLogPath(p, dir, "test_crawl_log_3"))
	require.Len(t, lines, 1)
	l, err := crawllog.ParseLine(lines[0])
	require.NoError(t, err)
	require.Equal(t, 200, l.Status)
	require.Equal(t, int64(0), l.ContentLength)
	require.Equal(t, "text/plain", l.MIMEType)
	require.Equal(t, []string{"contentSize", "method"}, extraKeys(t, lines[0]))
	require.Equal(t, "HEAD", l.Method)
	require.Equal(t, b32sha1(nil), l.PayloadDigest,
		"warcprox logs the digest of the (empty) HEAD payload even when the capture is not archived")

	lines = readLines(t, crawlLogPath(p, dir, "-"))
	require.Len(t, lines, 1)
	l, err = crawllog.ParseLine(lines[0])
	require.NoError(t, err)
	require.Equal(t, b32sha1([]byte(body)), l.PayloadDigest,
		"warcprox logs the payload digest of a warc-prefix \"-\" fetch")
}

// TestCompatCrawlLogFailedFetchColumns: warcprox logs a fetch that got no
// response as a FailedUrl whose duration is None, so the fetch-timestamp
// column is "-", and send_error is called with exception= only, so the
// extra-info object holds "exception" alone (test_crawl_log asserts
// fields[8] == b'-' and set(extra_info.keys()) == {'exception'} for
// test_crawl_log_6 and _7).
func TestCompatCrawlLogFailedFetchColumns(t *testing.T) {
	dir := t.TempDir()
	p := proxytest.Start(t, func(c *config.Config) { c.CrawlLogDir = dir })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String() + "/connection-error"
	ln.Close()
	resp, _ := fetch(t, p.Client(), refused, `{"warc-prefix": "test_crawl_log_6"}`)
	require.Equal(t, 502, resp.StatusCode)
	p.Settle()
	p.Stop()

	lines := readLines(t, crawlLogPath(p, dir, "test_crawl_log_6"))
	require.Len(t, lines, 1)
	fields := strings.Fields(lines[0])
	require.Len(t, fields, 13)
	require.Equal(t, "-2", fields[1])
	require.Equal(t, "0", fields[2])
	require.Equal(t, refused, fields[3])
	require.Equal(t, "unknown", fields[6])
	require.Equal(t, "-", fields[9])
	require.Equal(t, "-", fields[8], "warcprox: no fetch timestamp for a failed fetch")
	require.Equal(t, []string{"exception"}, extraKeys(t, lines[0]))
}

// TestCompatStatusKeys: warcprox's /status (warcproxy.py do_GET plus the
// controller's postfetch_status) always has role "warcprox", host,
// earliest_still_active_socket and earliest_still_active_postfetch
// (test_status_api asserts the exact key set and role == 'warcprox').
// Monitoring written for warcprox reads them.
func TestCompatStatusKeys(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	fetch(t, p.Client(), origin.URL+"/x", "")
	p.Settle()
	st := p.Status(t)
	var missing []string
	for _, k := range []string{"role", "version", "host", "address", "port", "pid", "load",
		"queued_urls", "queue_max_size", "seconds_behind", "threads",
		"rates_5min", "rates_1min", "unaccepted_requests", "rates_15min",
		"active_requests", "start_time", "urls_processed",
		"warc_bytes_written", "postfetch_chain",
		"earliest_still_active_fetch_start", "earliest_still_active_socket",
		"earliest_still_active_postfetch"} {
		if _, ok := st[k]; !ok {
			missing = append(missing, k)
		}
	}
	require.Empty(t, missing, "warcprox /status keys missing")
	host, _ := os.Hostname()
	require.Equal(t, host, st["host"])
	require.Equal(t, "warcprox", st["role"])
}

// TestCompatCrawlLogChunkedContentLength: warcprox's crawl log size column
// is response_recorder.len - payload_offset (crawl_log.py notify): the
// bytes of the body as they came over the wire, so for a chunked response
// it includes the chunk framing, and it equals contentSize minus the
// response head.
func TestCompatCrawlLogChunkedContentLength(t *testing.T) {
	origin := contentOrigin(t, false)
	dir := t.TempDir()
	p := startOneWriter(t, func(c *config.Config) { c.CrawlLogDir = dir })
	body := strings.Repeat("chunky ", 20)
	u := origin.URL + "/chunked?chunked=1&body=" + strings.ReplaceAll(body, " ", "%20")
	resp, got := fetch(t, p.Client(), u, `{"warc-prefix": "chunks"}`)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, body, got)
	p.Settle()
	p.Stop()
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 1)
	block := string(recs[0].Block)
	head, rawBody, ok := strings.Cut(block, "\r\n\r\n")
	require.True(t, ok)
	require.Contains(t, strings.ToLower(head), "transfer-encoding: chunked")

	lines := readLines(t, crawlLogPath(p, dir, "chunks"))
	require.Len(t, lines, 1)
	l, err := crawllog.ParseLine(lines[0])
	require.NoError(t, err)
	require.Equal(t, recs[0].BlockLen, l.ContentSize)
	require.Equal(t, int64(len(rawBody)), l.ContentLength,
		"warcprox: size column = recorder length - payload offset (wire bytes of the body)")
}

// TestCompatLimitsCheckedBeforeBlocks: warcprox's
// _enforce_limits_and_blocks runs _enforce_limits before _enforce_blocks,
// so a request that is both over a limit and blocked by a rule gets 420
// (and a Brozzler-style crawler ends the site on "reached-limit"), not
// 403 blocked-by-rule.
func TestCompatLimitsCheckedBeforeBlocks(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, nil)
	c := p.Client()
	meta := `{"stats": {"buckets": ["lb"]}, "limits": {"lb/total/urls": 1}, "blocks": [{"substring": "blocked"}]}`
	resp, _ := fetch(t, c, origin.URL+"/ok", meta)
	require.Equal(t, 200, resp.StatusCode)
	resp, body := fetch(t, c, origin.URL+"/blocked", meta)
	require.Equal(t, 420, resp.StatusCode, body)
	require.Equal(t, "request rejected by warcprox: reached limit lb/total/urls=1\n", body)
	require.Contains(t, resp.Header.Get("Warcprox-Meta"), `"reached-limit":{"lb/total/urls":1}`)
}

// TestCompatCrawlLogWriteRecordNotArchived: warcprox's crawl logger is a
// listener at the end of the postfetch chain and gets every RecordedUrl,
// including a WARCPROX_WRITE_RECORD whose warc-prefix is "-" (written
// nowhere): crawl_log.py notify logs it with status 204, size 0, payload
// digest "-" and extra {"contentSize": N, "method": "WARCPROX_WRITE_RECORD"}.
func TestCompatCrawlLogWriteRecordNotArchived(t *testing.T) {
	dir := t.TempDir()
	p := proxytest.Start(t, func(c *config.Config) { c.CrawlLogDir = dir })
	payload := "I am the WARCPROX_WRITE_RECORD payload"
	req, err := http.NewRequest("WARCPROX_WRITE_RECORD", "http://fakeurl/", strings.NewReader(payload))
	require.NoError(t, err)
	req.Header.Set("WARC-Type", "metadata")
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Warcprox-Meta", `{"warc-prefix": "-"}`)
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 204, resp.StatusCode)
	p.Settle()
	p.Stop()

	path := crawlLogPath(p, dir, "-")
	_, statErr := os.Stat(path)
	require.NoError(t, statErr, "no crawl log line for the WARCPROX_WRITE_RECORD")
	lines := readLines(t, path)
	require.Len(t, lines, 1)
	l, err := crawllog.ParseLine(lines[0])
	require.NoError(t, err)
	require.Equal(t, 204, l.Status)
	require.Equal(t, "http://fakeurl/", l.URL)
	require.Equal(t, []string{"contentSize", "method"}, extraKeys(t, lines[0]))
}
