package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/stats"
)

// contentOrigin serves the body and Content-Type named in the query
// (?body=...&ct=...), so that different URLs can carry the same payload.
// ?nolength=1 answers without Content-Length (close-delimited), ?chunked=1
// in chunks.
func contentOrigin(t *testing.T, useTLS bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		body := q.Get("body")
		if body == "" {
			body = "the same payload, whatever the URL"
		}
		if ct := q.Get("ct"); ct != "" {
			w.Header().Set("Content-Type", ct)
		} else {
			w.Header().Set("Content-Type", "text/plain")
		}
		switch {
		case q.Get("nolength") != "":
			w.Header().Set("Connection", "close")
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("cannot hijack")
				return
			}
			c, bw, err := hj.Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: close\r\n\r\n%s", w.Header().Get("Content-Type"), body)
			_ = bw.Flush()
			return
		case q.Get("chunked") != "":
			half := len(body) / 2
			_, _ = io.WriteString(w, body[:half])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, body[half:])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	})
	o := httptest.NewUnstartedServer(h)
	if useTLS {
		o.StartTLS()
	} else {
		o.Start()
	}
	t.Cleanup(o.Close)
	return o
}

// startOneWriter starts a proxy with one writer worker, so that one WARC
// file holds the records in the order they were written.
func startOneWriter(t *testing.T, mutate func(*config.Config)) *proxytest.Proxy {
	return proxytest.Start(t, func(c *config.Config) {
		c.WriterWorkers = 1
		if mutate != nil {
			mutate(c)
		}
	})
}

// fetch GETs url through the proxy with an optional Warcprox-Meta header
// and returns the response with its body read.
func fetch(t *testing.T, c *http.Client, url, meta string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if meta != "" {
		req.Header.Set("Warcprox-Meta", meta)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	return resp, string(body)
}

// principal returns the response and revisit records in file order.
func principal(recs []warccheck.Record) []warccheck.Record {
	var out []warccheck.Record
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			out = append(out, r)
		}
	}
	return out
}

// byURI indexes records by WARC-Target-URI.
func byURI(recs []warccheck.Record) map[string]warccheck.Record {
	m := make(map[string]warccheck.Record, len(recs))
	for _, r := range recs {
		m[r.TargetURI] = r
	}
	return m
}

// requireRevisitOf checks a revisit record against its original response.
func requireRevisitOf(t *testing.T, rev, orig warccheck.Record) {
	t.Helper()
	require.Equal(t, "revisit", rev.Type)
	require.Equal(t, "response", orig.Type)
	require.Equal(t, orig.ID, rev.Header["WARC-Refers-To"])
	require.Equal(t, orig.TargetURI, rev.Header["WARC-Refers-To-Target-URI"])
	require.Equal(t, orig.Header["WARC-Date"], rev.Header["WARC-Refers-To-Date"])
	require.Equal(t, orig.Header["WARC-Payload-Digest"], rev.Header["WARC-Payload-Digest"])
	require.Equal(t, "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest", rev.Header["WARC-Profile"])
	// The block is the response head only: status line and headers, up to
	// and including the blank line.
	head := string(rev.Block)
	require.True(t, strings.HasPrefix(head, "HTTP/1.1 200"), head)
	require.True(t, strings.HasSuffix(head, "\r\n\r\n"), "%q", head)
	require.Equal(t, 1, strings.Count(head, "\r\n\r\n"))
	require.Contains(t, head, "Content-Type: ", "the revisit keeps the fetch's headers")
}

// TestDedupRevisit: the second fetch of the same payload is a revisit of
// the first, over plain HTTP and inside a MITM tunnel, and the dedup entry
// still names the original.
func TestDedupRevisit(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			origin := contentOrigin(t, useTLS)
			p := startOneWriter(t, nil)
			c := p.Client()
			url := origin.URL + "/page"
			resp, body1 := fetch(t, c, url, "")
			require.Equal(t, 200, resp.StatusCode)
			p.Settle()
			resp, body2 := fetch(t, c, url, "")
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, body1, body2, "the client gets the whole body either way")
			p.Settle()
			// A different URL with the same payload is a revisit too.
			fetch(t, c, origin.URL+"/elsewhere", "")
			p.Settle()
			p.Stop()

			recs := principal(warccheck.Dir(t, p.Dir))
			require.Len(t, recs, 3)
			require.Equal(t, "response", recs[0].Type)
			requireRevisitOf(t, recs[1], recs[0])
			requireRevisitOf(t, recs[2], recs[0])
			require.Equal(t, origin.URL+"/elsewhere", recs[2].TargetURI)

			// The entry is unchanged by the revisits: it still names the
			// original.
			s := openDedupStore(t, p.Config.DedupDB)
			got, err := s.Lookup(context.Background(), []dedup.Key{{Digest: recs[0].Header["WARC-Payload-Digest"], Bucket: "__unspecified__"}})
			require.NoError(t, err)
			require.NotNil(t, got[0])
			require.Equal(t, dedup.Entry{ID: recs[0].ID, URL: url, Date: recs[0].Header["WARC-Date"]}, *got[0])
		})
	}
}

func openDedupStore(t *testing.T, spec string) dedup.Store {
	t.Helper()
	sp, err := store.Parse(spec)
	require.NoError(t, err)
	var h store.Handles
	s, err := dedup.Open(sp, &h)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestDedupBuckets: warcprox's record sequence with two buckets — a
// payload is a revisit only of a capture in the same bucket.
func TestDedupBuckets(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, nil)
	c := p.Client()
	url := origin.URL + "/bucketed"
	for _, bucket := range []string{"bucket_a", "bucket_b", "bucket_a", "bucket_b"} {
		resp, _ := fetch(t, c, url, fmt.Sprintf(`{"dedup-buckets": {%q: "rw"}}`, bucket))
		require.Equal(t, 200, resp.StatusCode)
		p.Settle()
	}
	// The legacy string form names one bucket too.
	fetch(t, c, url, `{"dedup-bucket": "bucket_a"}`)
	p.Settle()
	p.Stop()
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 5)
	require.Equal(t, "response", recs[0].Type)
	require.Equal(t, "response", recs[1].Type, "bucket_b has not seen the payload")
	requireRevisitOf(t, recs[2], recs[0])
	requireRevisitOf(t, recs[3], recs[1])
	requireRevisitOf(t, recs[4], recs[0])
}

// TestDedupReadOnlyBuckets: a read-only bucket is looked up but never
// written; lookups go through the buckets in order.
func TestDedupReadOnlyBuckets(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, nil)
	c := p.Client()
	url := origin.URL + "/ro"
	for _, meta := range []string{
		`{"dedup-buckets": {"ro_bucket": "ro"}}`,                         // response, not saved
		`{"dedup-buckets": {"ro_bucket": "ro"}}`,                         // response again
		`{"dedup-buckets": {"rw_bucket": "rw"}}`,                         // response, saved to rw_bucket
		`{"dedup-buckets": {"ro_bucket": "ro", "rw_bucket": "rw"}}`,      // revisit of the third
		`{"dedup-buckets": {"other": "rw", "ro_bucket": "ro"}}`,          // response: neither has it
		`{"dedup-buckets": {"other": "ro", "rw_bucket": "ro"}}`,          // revisit: other has the fifth, found first
		`{"dedup-buckets": {"rw_bucket": "ro", "other": "ro", "x": ""}}`, // revisit of the third; "" mode is rw
	} {
		resp, _ := fetch(t, c, url, meta)
		require.Equal(t, 200, resp.StatusCode, meta)
		p.Settle()
	}
	p.Stop()
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 7)
	for i, typ := range []string{"response", "response", "response", "revisit", "response", "revisit", "revisit"} {
		require.Equal(t, typ, recs[i].Type, "record %d", i)
	}
	requireRevisitOf(t, recs[3], recs[2])
	requireRevisitOf(t, recs[5], recs[4])
	requireRevisitOf(t, recs[6], recs[2])
}

// TestDedupParallelBuckets: 20 parallel fetches of one payload, each in
// its own bucket, are 20 responses; 20 more are 20 revisits, each of its
// own bucket's original.
func TestDedupParallelBuckets(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			origin := contentOrigin(t, useTLS)
			p := proxytest.Start(t, nil)
			c := p.Client()
			round := func() {
				var wg sync.WaitGroup
				for i := range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp, _ := fetch(t, c, fmt.Sprintf("%s/par/%d", origin.URL, i), fmt.Sprintf(`{"dedup-buckets": {"b%d": "rw"}}`, i))
						require.Equal(t, 200, resp.StatusCode)
					}()
				}
				wg.Wait()
				p.Settle()
			}
			round()
			round()
			p.Stop()
			recs := principal(warccheck.Dir(t, p.Dir))
			require.Len(t, recs, 40)
			first := map[string]warccheck.Record{}
			revisits := 0
			for _, r := range recs {
				if r.Type == "response" {
					require.NotContains(t, first, r.TargetURI, "one response per bucket")
					first[r.TargetURI] = r
				}
			}
			require.Len(t, first, 20)
			for _, r := range recs {
				if r.Type == "revisit" {
					revisits++
					requireRevisitOf(t, r, first[r.TargetURI])
				}
			}
			require.Equal(t, 20, revisits)
		})
	}
}

// TestDedupMinSizes: payloads not larger than the minimum for their kind
// (text or binary) are written in full every time.
func TestDedupMinSizes(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, func(c *config.Config) {
		c.DedupMinTextSize = 10
		c.DedupMinBinarySize = 5
	})
	c := p.Client()
	urls := []string{
		origin.URL + "/t?body=0123456789&ct=text/html",                         // 10 bytes of text: not > 10
		origin.URL + "/t?body=0123456789A&ct=text/html",                        // 11: deduped
		origin.URL + "/b?body=01234&ct=image/png",                              // 5 bytes binary: not > 5
		origin.URL + "/b?body=012345&ct=image/png",                             // 6: deduped
		origin.URL + "/j?body=0123456789&ct=application/json;%20charset=utf-8", // JSON is text
	}
	for range 2 {
		for _, u := range urls {
			fetch(t, c, u, "")
		}
		p.Settle()
	}
	p.Stop()
	types := map[string][]string{}
	for _, r := range principal(warccheck.Dir(t, p.Dir)) {
		types[r.TargetURI] = append(types[r.TargetURI], r.Type)
	}
	require.Equal(t, []string{"response", "response"}, types[urls[0]])
	require.Equal(t, []string{"response", "revisit"}, types[urls[1]])
	require.Equal(t, []string{"response", "response"}, types[urls[2]])
	require.Equal(t, []string{"response", "revisit"}, types[urls[3]])
	require.Equal(t, []string{"response", "response"}, types[urls[4]])
}

// TestDedupFramings: chunked and close-delimited responses, gzip or not,
// get the payload digest of their decoded-transfer, still-encoded body, so
// the same payload dedups whatever the framing.
func TestDedupFramings(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, nil)
	c := p.Client()
	body := strings.Repeat("framing-independent payload ", 40)
	urls := []string{
		origin.URL + "/len?body=" + body,
		origin.URL + "/chunked?chunked=1&body=" + body,
		origin.URL + "/nolength?nolength=1&body=" + body,
	}
	for _, u := range urls {
		resp, got := fetch(t, c, strings.ReplaceAll(u, " ", "%20"), "")
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, body, got)
		p.Settle()
	}
	p.Stop()
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 3)
	require.Equal(t, "response", recs[0].Type)
	requireRevisitOf(t, recs[1], recs[0])
	requireRevisitOf(t, recs[2], recs[0])
	require.Equal(t, b32sha1([]byte(body)), recs[0].Header["WARC-Payload-Digest"])
}

// TestBlackoutPeriod: a duplicate of the same URL inside the blackout
// period is not written at all; one at another URL is still a revisit.
func TestBlackoutPeriod(t *testing.T) {
	origin := contentOrigin(t, false)
	p := startOneWriter(t, func(c *config.Config) { c.BlackoutPeriod = 3600e9 })
	c := p.Client()
	fetch(t, c, origin.URL+"/same", "")
	p.Settle()
	resp, body := fetch(t, c, origin.URL+"/same", "")
	require.Equal(t, 200, resp.StatusCode)
	require.NotEmpty(t, body)
	fetch(t, c, origin.URL+"/other", "")
	p.Settle()
	p.Stop()
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 2)
	require.Equal(t, origin.URL+"/same", recs[0].TargetURI)
	requireRevisitOf(t, recs[1], recs[0])
	require.Equal(t, origin.URL+"/other", recs[1].TargetURI)
}

// TestStatsBuckets: captures are counted in __all__, in the buckets the
// request names (or __unspecified__), and per tallied domain; new and
// revisit are told apart and wire_bytes is the size of the response as
// recorded.
func TestStatsBuckets(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	c := p.Client()
	port := strings.TrimPrefix(origin.URL, "http://127.0.0.1:")
	localhostURL := "http://localhost:" + port
	meta := `{"stats": {"buckets": ["job1", {"bucket": "job2", "tally-domains": ["LOCALHOST", "example.org"]}]}}`
	fetch(t, c, origin.URL+"/a", meta) // new, 127.0.0.1
	p.Settle()
	fetch(t, c, localhostURL+"/b", meta)    // revisit, localhost
	fetch(t, c, origin.URL+"/c?body=x", "") // new, no buckets: __unspecified__
	fetch(t, c, origin.URL+"/d", `{"warc-prefix": "-", "stats": {"buckets": ["job1"]}}`)
	p.Settle()
	p.Stop()

	// The counters as stored after the write: a fresh reader of the
	// database the proxy was given.
	sp, err := store.Parse(p.Config.StatsDB)
	require.NoError(t, err)
	var h store.Handles
	st, err := stats.Open(sp, &h)
	require.NoError(t, err)
	defer st.Close()
	names := []string{"__all__", "job1", "job2", "job2:localhost", "job2:example.org", "__unspecified__"}
	got, err := st.Get(context.Background(), names)
	require.NoError(t, err)

	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 3, "the warc-prefix - fetch is not written")
	size := map[string]int64{}
	for _, r := range recs {
		size[r.TargetURI] = r.BlockLen
	}
	respA := size[origin.URL+"/a"]
	// A revisit's wire bytes are the whole response fetched, not the
	// record's head-only block.
	respB := respA
	respC := size[origin.URL+"/c?body=x"]
	respD := respA
	c1 := func(urls, bytes int64) stats.Counts { return stats.Counts{URLs: urls, WireBytes: bytes} }
	require.Equal(t, stats.Bucket{Total: c1(4, respA+respB+respC+respD), New: c1(2, respA+respC), Revisit: c1(1, respB)}, got["__all__"])
	require.Equal(t, stats.Bucket{Total: c1(3, respA+respB+respD), New: c1(1, respA), Revisit: c1(1, respB)}, got["job1"],
		"a capture not written counts in total only")
	require.Equal(t, stats.Bucket{Total: c1(2, respA+respB), New: c1(1, respA), Revisit: c1(1, respB)}, got["job2"])
	require.Equal(t, stats.Bucket{Total: c1(1, respB), Revisit: c1(1, respB)}, got["job2:localhost"])
	require.Equal(t, stats.Bucket{}, got["job2:example.org"])
	require.Equal(t, stats.Bucket{Total: c1(1, respC), New: c1(1, respC)}, got["__unspecified__"])
}

// TestLimits: with limits {"job1/total/urls": 10}, ten fetches pass and
// the eleventh gets 420 with warcprox's Warcprox-Meta response header and
// exact stats, before anything was flushed or even written; it never
// reaches the origin. Over http and https.
func TestLimits(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			var hits sync.Map
			origin := contentOrigin(t, useTLS)
			inner := origin.Config.Handler
			origin.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Store(r.URL.Path, true)
				inner.ServeHTTP(w, r)
			})
			p := proxytest.Start(t, nil)
			c := p.Client()
			meta := `{"stats": {"buckets": ["job1"]}, "limits": {"job1/total/urls": 10}}`
			for i := range 10 {
				resp, _ := fetch(t, c, fmt.Sprintf("%s/limit/%d?body=%d", origin.URL, i, i), meta)
				require.Equal(t, 200, resp.StatusCode)
			}
			resp, body := fetch(t, c, origin.URL+"/limit/11", meta)
			require.Equal(t, 420, resp.StatusCode)
			require.Equal(t, "420 Reached limit", resp.Status)
			require.Equal(t, "request rejected by warcprox: reached limit job1/total/urls=10\n", body)
			var rm struct {
				Stats        map[string]json.RawMessage `json:"stats"`
				ReachedLimit map[string]int64           `json:"reached-limit"`
			}
			require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Warcprox-Meta")), &rm))
			require.Equal(t, map[string]int64{"job1/total/urls": 10}, rm.ReachedLimit)
			var doc struct {
				Bucket string `json:"bucket"`
				Total  struct {
					URLs int64 `json:"urls"`
				} `json:"total"`
				New struct {
					URLs int64 `json:"urls"`
				} `json:"new"`
			}
			require.NoError(t, json.Unmarshal(rm.Stats["job1"], &doc))
			require.Equal(t, "job1", doc.Bucket)
			require.Equal(t, int64(10), doc.Total.URLs)
			require.Equal(t, int64(10), doc.New.URLs)
			_, reached := hits.Load("/limit/11")
			require.False(t, reached, "a request over the limit is not fetched")

			// Other buckets are not limited by job1's limit.
			resp, _ = fetch(t, c, origin.URL+"/free", `{"stats": {"buckets": ["job2"]}, "limits": {"job1/total/urls": 10}}`)
			require.Equal(t, 200, resp.StatusCode)
			// WARCPROX_WRITE_RECORD is subject to limits too.
			req, _ := http.NewRequest("WARCPROX_WRITE_RECORD", origin.URL+"/rec", strings.NewReader("x"))
			req.Header.Set("WARC-Type", "resource")
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Warcprox-Meta", meta)
			wr, err := c.Do(req)
			require.NoError(t, err)
			wr.Body.Close()
			require.Equal(t, 420, wr.StatusCode)
		})
	}
}

// TestSoftLimitsByDomain: a soft limit on a tallied domain applies to that
// domain only, answering 430.
func TestSoftLimitsByDomain(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	c := p.Client()
	port := strings.TrimPrefix(origin.URL, "http://127.0.0.1:")
	meta := `{"stats": {"buckets": [{"bucket": "job", "tally-domains": ["Localhost"]}]}, "soft-limits": {"job:LOCALHOST/new/urls": 3}}`
	for i := range 3 {
		resp, _ := fetch(t, c, fmt.Sprintf("http://localhost:%s/s/%d?body=%d", port, i, i), meta)
		require.Equal(t, 200, resp.StatusCode)
	}
	resp, body := fetch(t, c, "http://localhost:"+port+"/s/4?body=4", meta)
	require.Equal(t, 430, resp.StatusCode)
	require.Equal(t, "430 Reached soft limit", resp.Status)
	require.Equal(t, "request rejected by warcprox: reached soft limit job:localhost/new/urls=3\n", body)
	var rm map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Warcprox-Meta")), &rm))
	require.Equal(t, map[string]any{"job:localhost/new/urls": float64(3)}, rm["reached-soft-limit"])
	require.Contains(t, rm["stats"], "job:localhost")
	// The same bucket on another host is not limited.
	resp, _ = fetch(t, c, origin.URL+"/s/5?body=5", meta)
	require.Equal(t, 200, resp.StatusCode)
}

// TestMimeTypeFilters: REJECT and LIMIT filters stop a capture from being
// written; the client gets the response all the same.
func TestMimeTypeFilters(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	c := p.Client()
	reject := `{"mime-type-filters": [{"type": "REJECT", "regex": "image/.*"}]}`
	limit := `{"mime-type-filters": [{"type": "LIMIT", "regex": "text/html"}]}`
	for _, tt := range []struct {
		path, meta string
		archived   bool
	}{
		{"/r1?ct=image/png&body=png", reject, false},
		{"/r2?ct=text/html&body=html", reject, true},
		{"/l1?ct=text/html%3Bcharset=utf-8&body=h2", limit, true},
		{"/l2?ct=application/pdf&body=pdf", limit, false},
	} {
		resp, body := fetch(t, c, origin.URL+tt.path, tt.meta)
		require.Equal(t, 200, resp.StatusCode)
		require.NotEmpty(t, body)
	}
	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	require.Len(t, res, 2)
	require.Contains(t, res, origin.URL+"/r2?ct=text/html&body=html")
	require.Contains(t, res, origin.URL+"/l1?ct=text/html%3Bcharset=utf-8&body=h2")
}

// TestStatusKeys: /status carries warcprox's keys.
func TestStatusKeys(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, nil)
	fetch(t, p.Client(), origin.URL+"/x", "")
	p.Settle()
	st := p.Status(t)
	for _, k := range []string{"rates_1min", "rates_5min", "rates_15min", "seconds_behind",
		"earliest_still_active_fetch_start", "unaccepted_requests", "active_requests", "queued_urls",
		"queue_max_size", "urls_processed", "warc_bytes_written", "start_time", "load", "threads",
		"postfetch_chain", "dedup", "stats"} {
		require.Contains(t, st, k)
	}
	require.Equal(t, "gzip", st["warc_compression"])
	require.Equal(t, float64(0), st["seconds_behind"], "nothing is behind once settled")
	require.Nil(t, st["earliest_still_active_fetch_start"])
	require.Equal(t, float64(1), st["urls_processed"])
	rates := st["rates_1min"].(map[string]any)
	for _, k := range []string{"actual_elapsed", "urls_per_sec", "warc_bytes_per_sec"} {
		require.Contains(t, rates, k)
	}
}

// TestCrawlLog: --crawl-log-dir writes one Heritrix line per fetch, in a
// file per warc-prefix, naming the WARC file and offset of the record.
func TestCrawlLog(t *testing.T) {
	origin := contentOrigin(t, false)
	dir := t.TempDir()
	p := proxytest.Start(t, func(c *config.Config) { c.CrawlLogDir = dir })
	c := p.Client()
	meta := `{"warc-prefix": "job7", "metadata": {"seed": "http://seed.example/"}}`
	fetch(t, c, origin.URL+"/first", meta)
	p.Settle()
	fetch(t, c, origin.URL+"/second", meta)
	fetch(t, c, origin.URL+"/noprefix?body=other", "")
	p.Settle()
	// A fetch that fails: connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String() + "/gone"
	ln.Close()
	resp, _ := fetch(t, c, refused, meta)
	require.Equal(t, 502, resp.StatusCode)
	p.Stop()

	recs := warccheck.Dir(t, p.Dir)
	byURI := map[string]warccheck.Record{}
	for _, r := range principal(recs) {
		byURI[r.TargetURI] = r
	}
	host, _ := os.Hostname()
	short, _, _ := strings.Cut(host, ".")
	port := strconv.Itoa(p.App.Addr().Port)
	lines := readLines(t, filepath.Join(dir, "job7-"+short+"-"+port+".log"))
	require.Len(t, lines, 3)
	lines2 := readLines(t, filepath.Join(dir, "crawl-"+short+"-"+port+".log"))
	require.Len(t, lines2, 1)

	for i, want := range []struct {
		url     string
		revisit bool
	}{{origin.URL + "/first", false}, {origin.URL + "/second", true}} {
		l, err := crawllog.ParseLine(lines[i])
		require.NoError(t, err, lines[i])
		rec := byURI[want.url]
		require.Equal(t, 200, l.Status)
		require.Equal(t, want.url, l.URL)
		require.Equal(t, "text/plain", l.MIMEType)
		require.Equal(t, rec.Header["WARC-Payload-Digest"], l.PayloadDigest)
		require.Equal(t, "http://seed.example/", l.Seed)
		require.Equal(t, want.revisit, l.Revisit)
		require.Equal(t, rec.File, l.WARCFilename)
		require.Equal(t, rec.Offset, l.WARCOffset)
		require.Equal(t, int64(len("the same payload, whatever the URL")), l.ContentLength)
	}
	l, err := crawllog.ParseLine(lines[2])
	require.NoError(t, err, lines[2])
	require.Equal(t, -2, l.Status, "connection refused is Heritrix's -2")
	require.Equal(t, refused, l.URL)
	require.Empty(t, l.WARCFilename)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

// TestFleetSharesRedis: two proxy processes' worth of wiring sharing one
// Redis for dedup and stats: content fetched through the first is a
// revisit through the second, and stats add up across both.
func TestFleetSharesRedis(t *testing.T) {
	url := redistest.URL(t)
	origin := contentOrigin(t, false)
	start := func() *proxytest.Proxy {
		return startOneWriter(t, func(c *config.Config) {
			c.DedupDB = url
			c.StatsDB = url
		})
	}
	p1, p2 := start(), start()
	meta := `{"stats": {"buckets": ["fleet"]}, "dedup-buckets": {"fleet": "rw"}}`
	fetch(t, p1.Client(), origin.URL+"/shared", meta)
	p1.SettleStores() // in Redis, where the second proxy looks
	c2 := p2.Client()
	fetch(t, c2, origin.URL+"/shared", meta)
	fetch(t, c2, origin.URL+"/only2?body=two", meta)
	p2.Settle()
	p1.Stop()
	p2.Stop()
	r1 := principal(warccheck.Dir(t, p1.Dir))
	r2 := byURI(principal(warccheck.Dir(t, p2.Dir)))
	require.Len(t, r1, 1)
	require.Len(t, r2, 2)
	require.Equal(t, "response", r1[0].Type)
	requireRevisitOf(t, r2[origin.URL+"/shared"], r1[0])
	require.Equal(t, "response", r2[origin.URL+"/only2?body=two"].Type)

	sp, err := store.Parse(url)
	require.NoError(t, err)
	var h store.Handles
	st, err := stats.Open(sp, &h)
	require.NoError(t, err)
	defer st.Close()
	got, err := st.Get(context.Background(), []string{"fleet"})
	require.NoError(t, err)
	require.Equal(t, int64(3), got["fleet"].Total.URLs)
	require.Equal(t, int64(2), got["fleet"].New.URLs)
	require.Equal(t, int64(1), got["fleet"].Revisit.URLs)
}

// TestDedupRedisURLTable: on Redis, a payload seen before at the same URL
// is a revisit whether or not the index keeps full URLs; one seen at
// another URL is a revisit naming that URL with the URL table (the
// default), and written in full without it (--dedup-url-table=false).
func TestDedupRedisURLTable(t *testing.T) {
	for _, table := range []bool{true, false} {
		t.Run(fmt.Sprintf("url-table=%v", table), func(t *testing.T) {
			origin := contentOrigin(t, false)
			p := startOneWriter(t, func(c *config.Config) {
				c.DedupDB = redistest.URL(t)
				c.DedupURLTable = table
			})
			c := p.Client()
			for _, path := range []string{"/page", "/page", "/elsewhere"} {
				resp, _ := fetch(t, c, origin.URL+path, "")
				require.Equal(t, 200, resp.StatusCode)
				p.SettleStores()
			}
			p.Stop()
			recs := principal(warccheck.Dir(t, p.Dir))
			require.Len(t, recs, 3)
			require.Equal(t, "response", recs[0].Type)
			requireRevisitOf(t, recs[1], recs[0])
			if table {
				requireRevisitOf(t, recs[2], recs[0])
			} else {
				require.Equal(t, "response", recs[2].Type, "another URL, its original's URL unknown: written in full")
			}
			require.Equal(t, origin.URL+"/elsewhere", recs[2].TargetURI)
		})
	}
}

// TestSubdirPrefix: with --subdir-prefix each prefix's WARCs go into
// dir/prefix/, the default prefix's too.
func TestSubdirPrefix(t *testing.T) {
	origin := contentOrigin(t, false)
	p := proxytest.Start(t, func(c *config.Config) { c.SubdirPrefix = true })
	c := p.Client()
	fetch(t, c, origin.URL+"/a?body=a", `{"warc-prefix": "job-x"}`)
	fetch(t, c, origin.URL+"/b?body=b", "")
	p.Stop()
	for prefix, uri := range map[string]string{"job-x": "/a?body=a", "WARCPROX": "/b?body=b"} {
		files, err := filepath.Glob(filepath.Join(p.Dir, prefix, prefix+"-*.warc.gz"))
		require.NoError(t, err)
		require.Len(t, files, 1, prefix)
		recs := principal(warccheck.Files(t, files...))
		require.Len(t, recs, 1)
		require.Equal(t, origin.URL+uri, recs[0].TargetURI)
	}
}
