package dedup_test

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/testutil/cdxserver"
)

func sha1Of(s string) []byte {
	h := sha1.Sum([]byte(s))
	return h[:]
}

func b32(p []byte) string { return base32.StdEncoding.EncodeToString(p) }

// newCDX starts a client of url with a pedantic registry.
func newCDX(t *testing.T, url string, mutate func(*dedup.CDXOptions)) (*dedup.CDX, *prometheus.Registry) {
	t.Helper()
	o := dedup.CDXOptions{URL: url, Timeout: 2 * time.Second}
	if mutate != nil {
		mutate(&o)
	}
	reg := prometheus.NewPedanticRegistry()
	c, err := dedup.NewCDX(o, nil, reg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, reg
}

// TestCDXLookup: the answers of a CDX server with two captures of one URL
// (the newest counts) and a revisit (never asked for), in every digest
// spelling.
func TestCDXLookup(t *testing.T) {
	const u = "http://example.com/a"
	old, cur := sha1Of("old body"), sha1Of("current body")
	srv := cdxserver.New(t, []cdxserver.Capture{
		{"urlkey": "com,example)/a", "timestamp": "20200101000000", "url": u, "mime": "text/html", "status": "200", "digest": b32(old)},
		{"urlkey": "com,example)/a", "timestamp": "20240229123456", "url": u, "mime": "text/html", "status": "200", "digest": b32(cur)},
		{"urlkey": "com,example)/a", "timestamp": "20250101000000", "url": u, "mime": "warc/revisit", "status": "200", "digest": b32(old)},
	})
	c, reg := newCDX(t, srv.URL+"/cdx/search?collection=web", func(o *dedup.CDXOptions) { o.CacheSize = -1 })
	ctx := context.Background()

	for _, tt := range []struct {
		name, digest, uri string
		hit               bool
	}{
		{"newest capture, base32", "sha1:" + b32(cur), u, true},
		{"newest capture, hex", "sha1:" + hex.EncodeToString(cur), u, true},
		{"newest capture, lower-case base32 without label", strings.ToLower(b32(cur)), u, true},
		{"older capture is not the newest", "sha1:" + b32(old), u, false},
		{"another URL", "sha1:" + b32(cur), "http://example.com/b", false},
		{"another payload", "sha1:" + b32(sha1Of("x")), u, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := c.Lookup(ctx, tt.digest, tt.uri)
			require.NoError(t, err)
			if !tt.hit {
				require.Nil(t, e)
				return
			}
			require.Equal(t, &dedup.Entry{URL: u, Date: "2024-02-29T12:34:56Z"}, e)
		})
	}

	// warcprox's query, and the parameters already in the URL kept.
	q := srv.Queries()[0]
	require.Equal(t, u, q.Get("url"))
	require.Equal(t, "timestamp,digest", q.Get("fl"))
	require.Equal(t, []string{"!mimetype:warc/revisit"}, q["filter"])
	require.Equal(t, "-1", q.Get("limit"))
	require.Equal(t, "web", q.Get("collection"))

	requireCDXCounts(t, reg, map[string]float64{"hit": 3, "miss": 3, "error": 0, "skipped": 0})
	problems, err := promtest.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func requireCDXCounts(t *testing.T, reg prometheus.Gatherer, want map[string]float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "warcproxy_dedup_cdx_lookups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, want, got)
}

func cdxErrors(t *testing.T, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "warcproxy_dedup_cdx_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no warcproxy_dedup_cdx_errors_total{reason=%q}", reason)
	return 0
}

// TestCDXAnswerForms: the line forms a CDX server may answer with.
func TestCDXAnswerForms(t *testing.T) {
	d := b32(sha1Of("body"))
	for _, tt := range []struct {
		name, body string
		hit        bool
		reason     string // of the error, if any
	}{
		{"fields asked for", "20240102030405 " + d + "\n", true, ""},
		{"sha1 label in the index", "20240102030405 sha1:" + d + "\n", true, ""},
		{"several lines: the last is the newest", "20200101000000 AAAA\n20240102030405 " + d + "\n", true, ""},
		{"pywb CDXJ", `com,example)/ 20240102030405 {"url": "http://example.com/", "digest": "` + d + `"}` + "\n", true, ""},
		{"NDJSON", `{"timestamp": "20240102030405", "digest": "` + d + `"}` + "\n", true, ""},
		{"no capture", "", false, ""},
		{"blank lines only", "\n\n", false, ""},
		{"other digest", "20240102030405 " + b32(sha1Of("other")) + "\n", false, ""},
		{"sha256 in the index", "20240102030405 sha256:" + strings.Repeat("A", 52) + "\n", false, ""},
		{"HTML", "<html><body><h1>Welcome</h1>\n<p>Service temporarily unavailable</p></body></html>\n", false, "bad_answer"},
		{"short timestamp", "2024 " + d + "\n", false, "bad_answer"},
		{"one field", "20240102030405\n", false, "bad_answer"},
		{"broken JSON", `{"timestamp": "2024`, false, "bad_answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c, reg := newCDX(t, srv.URL, nil)
			e, err := c.Lookup(context.Background(), "sha1:"+d, "http://example.com/")
			if tt.reason != "" {
				require.Error(t, err)
				require.Nil(t, e)
				require.Equal(t, 1.0, cdxErrors(t, reg, tt.reason))
				return
			}
			require.NoError(t, err)
			if tt.hit {
				require.Equal(t, &dedup.Entry{URL: "http://example.com/", Date: "2024-01-02T03:04:05Z"}, e)
			} else {
				require.Nil(t, e)
			}
		})
	}
}

// TestCDXFaults: a CDX server that is down, slow, failing, talking HTML or
// sending without end costs a miss within the timeout, an error counted by
// reason, and nothing else.
func TestCDXFaults(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + l.Addr().String() + "/cdx"
	require.NoError(t, l.Close())

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	handlers := map[string]http.HandlerFunc{
		"slow": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		},
		"500": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "internal error", http.StatusInternalServerError)
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		},
		"html": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html>\n<html><head><title>Login</title></head>\n<body>Please log in</body></html>\n")
		},
		"huge": func(w http.ResponseWriter, r *http.Request) {
			line := []byte("20240102030405 " + strings.Repeat("A", 32) + "\n")
			for i := 0; i < 1<<20 && r.Context().Err() == nil; i++ {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		},
		"slow body": func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			for r.Context().Err() == nil {
				if _, err := w.Write([]byte("2")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
			}
		},
	}
	for _, tt := range []struct{ name, reason string }{
		{"down", "connect"},
		{"slow", "timeout"},
		{"slow body", "timeout"},
		{"500", "status"},
		{"redirect", "status"},
		{"html", "bad_answer"},
		{"huge", "too_large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := closedURL
			if h := handlers[tt.name]; h != nil {
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			c, reg := newCDX(t, url, func(o *dedup.CDXOptions) { o.Timeout = timeout })
			start := time.Now()
			e, err := c.Lookup(context.Background(), "sha1:"+b32(sha1Of("x")), "http://example.com/")
			took := time.Since(start)
			require.Error(t, err)
			require.Nil(t, e)
			require.Equal(t, 1.0, cdxErrors(t, reg, tt.reason), "%v", err)
			requireCDXCounts(t, reg, map[string]float64{"hit": 0, "miss": 0, "error": 1, "skipped": 0})
			// Bounded by the timeout (with room for a loaded machine), not
			// by the server.
			require.Less(t, took, timeout+2*time.Second)
		})
	}
}

// TestCDXConcurrencyCap: with every request slot taken by a server that
// does not answer, a further lookup gives up within its timeout as busy,
// and the in-flight gauge shows the cap.
func TestCDXConcurrencyCap(t *testing.T) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	c, reg := newCDX(t, srv.URL, func(o *dedup.CDXOptions) {
		o.MaxConcurrent = 2
		o.Timeout = 5 * time.Second
	})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			_, _ = c.Lookup(ctx, "sha1:"+b32(sha1Of("x")), fmt.Sprintf("http://example.com/%d", i))
		})
	}
	arrived.Wait()
	require.Equal(t, 2.0, gaugeValue(t, reg, "warcproxy_dedup_cdx_requests_in_flight"))

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.Lookup(short, "sha1:"+b32(sha1Of("x")), "http://example.com/third")
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.Equal(t, 1.0, cdxErrors(t, reg, "busy"))
	release <- struct{}{}
	release <- struct{}{}
	wg.Wait()
}

func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestCDXCacheAndSkips: a repeated lookup is answered from the cache; URLs
// with session ids and lookups without a URL never reach the server.
func TestCDXCacheAndSkips(t *testing.T) {
	d := b32(sha1Of("body"))
	srv := cdxserver.New(t, []cdxserver.Capture{
		{"urlkey": "com,example)/", "timestamp": "20240102030405", "url": "http://example.com/", "mime": "text/html", "digest": d},
	})
	c, reg := newCDX(t, srv.URL, func(o *dedup.CDXOptions) { o.Cookies = "a=1; b=2" })
	ctx := context.Background()
	for range 3 {
		e, err := c.Lookup(ctx, "sha1:"+d, "http://example.com/")
		require.NoError(t, err)
		require.NotNil(t, e)
		e.URL = "changed by the caller" // must not change the cached answer
	}
	for _, u := range []string{"", "http://example.com/;JSESSIONID=1", "http://example.com/?session=1", "http://example.com/?sess=2"} {
		e, err := c.Lookup(ctx, "sha1:"+d, u)
		require.NoError(t, err)
		require.Nil(t, e)
	}
	require.Len(t, srv.Queries(), 1)
	requireCDXCounts(t, reg, map[string]float64{"hit": 3, "miss": 0, "error": 0, "skipped": 4})
	require.Equal(t, map[string]any{
		"enabled": true, "server": "closed", "url": srv.URL, "hits": uint64(3), "misses": uint64(0),
		"skipped": uint64(4), "errors": uint64(0), "cache_hits": uint64(2),
		"prefetched": uint64(0), "prefetch_busy": uint64(0),
	}, c.Status())
}

// TestCDXRequestHeaders: the cookie and user agent reach the server.
func TestCDXRequestHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	c, _ := newCDX(t, srv.URL, func(o *dedup.CDXOptions) {
		o.Cookies = "a=1; b=2"
		o.UserAgent = "warcproxy/test"
	})
	_, err := c.Lookup(context.Background(), "sha1:"+b32(sha1Of("x")), "http://example.com/")
	require.NoError(t, err)
	h := <-got
	require.Equal(t, "a=1; b=2", h.Get("Cookie"))
	require.Equal(t, "warcproxy/test", h.Get("User-Agent"))
}

// TestCDXOnlySHA1: a sha256 payload digest cannot be compared with a CDX
// index: the lookup fails (counted) without a request.
func TestCDXOnlySHA1(t *testing.T) {
	srv := cdxserver.New(t, nil)
	c, reg := newCDX(t, srv.URL, nil)
	_, err := c.Lookup(context.Background(), "sha256:"+strings.Repeat("A", 52), "http://example.com/")
	require.Error(t, err)
	require.Equal(t, 1.0, cdxErrors(t, reg, "digest"))
	require.Empty(t, srv.Queries())
}

func TestNewCDXRefusesBadOptions(t *testing.T) {
	for _, o := range []dedup.CDXOptions{
		{URL: ""},
		{URL: "web.archive.org/cdx/search"},
		{URL: "ftp://example.com/cdx"},
		{URL: "http://example.com/cdx", MaxConcurrent: -1},
		{URL: "http://example.com/cdx", Cookies: "a=1\r\nX: y"},
	} {
		_, err := dedup.NewCDX(o, nil, nil)
		require.Error(t, err, "%+v", o)
	}
}

// gatedCDX is a CDX server that answers "TIMESTAMP DIGEST" for every URL,
// but only once the test lets each query go; arrived receives each
// query's url parameter as it comes in.
type gatedCDX struct {
	*httptest.Server
	arrived chan string
	release chan struct{}
}

func newGatedCDX(t *testing.T, digest string) *gatedCDX {
	g := &gatedCDX{arrived: make(chan string, 16), release: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived <- r.URL.Query().Get("url")
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "20240102030405 %s\n", digest)
	}))
	t.Cleanup(g.Close)
	return g
}

// TestCDXPrefetch: the query sent when the request arrives is the one the
// lookup uses once the payload is known: a lookup made while it is still
// in flight joins it (one query, the right answer), and a later one finds
// the answer cached.
func TestCDXPrefetch(t *testing.T) {
	d := b32(sha1Of("body"))
	g := newGatedCDX(t, d)
	c, reg := newCDX(t, g.URL, nil)
	const u = "http://example.com/page"
	c.Prefetch(u)
	require.Equal(t, u, <-g.arrived)
	c.Prefetch(u) // already in flight: nothing new

	got := make(chan *dedup.Entry, 1)
	go func() {
		e, err := c.Lookup(context.Background(), "sha1:"+d, u)
		assert.NoError(t, err)
		got <- e
	}()
	close(g.release)
	e := <-got
	require.NotNil(t, e)
	require.Equal(t, dedup.Entry{URL: u, Date: "2024-01-02T03:04:05Z"}, *e)

	c.Prefetch(u) // answered already: nothing new
	e, err := c.Lookup(context.Background(), "sha1:"+b32(sha1Of("other body")), u)
	require.NoError(t, err)
	require.Nil(t, e, "the newest capture has another payload")
	require.Empty(t, g.arrived, "one query for the URL in all")
	requireCDXCounts(t, reg, map[string]float64{"hit": 1, "miss": 1, "error": 0, "skipped": 0})
	require.Equal(t, uint64(1), c.Status()["prefetched"])
}

// TestCDXPrefetchNeverWaits: with every request slot busy a prefetch does
// nothing (the lookup asks later), so a burst of requests cannot pile up
// goroutines; session URLs are not prefetched at all; Close cancels a
// prefetch in flight and waits for it.
func TestCDXPrefetchNeverWaits(t *testing.T) {
	d := b32(sha1Of("body"))
	g := newGatedCDX(t, d)
	c, _ := newCDX(t, g.URL, func(o *dedup.CDXOptions) { o.MaxConcurrent = 1 })
	c.Prefetch("http://example.com/a")
	require.Equal(t, "http://example.com/a", <-g.arrived)
	c.Prefetch("http://example.com/b")              // no free slot
	c.Prefetch("http://example.com/c;JSESSIONID=1") // never looked up
	require.NoError(t, c.Close())                   // returns: the prefetch of /a was cancelled
	require.Empty(t, g.arrived)
	require.Equal(t, uint64(1), c.Status()["prefetched"])
	require.Equal(t, uint64(1), c.Status()["prefetch_busy"], "/b")
}

// TestCDXQueryAndSecrets: the query carries warcprox's parameters in
// warcprox's order, then the configured URL's own (a collection, an API
// key) as given; the password and the parameter values never appear in
// /status or in the failure log.
func TestCDXQueryAndSecrets(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.RawQuery
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://archivist:s3cret@", 1) + "/cdx?coll=web&apikey=KEY123&limit=5"
	c, _ := newCDX(t, base, nil)
	_, err := c.Lookup(context.Background(), "sha1:"+b32(sha1Of("x")), "http://example.com/a b")
	require.NoError(t, err)
	require.Equal(t, "url=http%3A%2F%2Fexample.com%2Fa+b&fl=timestamp%2Cdigest&filter=%21mimetype%3Awarc%2Frevisit&limit=-1&coll=web&apikey=KEY123", <-got)

	shown := c.Status()["url"].(string)
	require.Equal(t, c.URL(), shown)
	for _, secret := range []string{"s3cret", "KEY123", "web"} {
		require.NotContains(t, shown, secret)
	}
	require.Contains(t, shown, "/cdx?coll=xxxxx&apikey=xxxxx")

	// A failing server: the log names the reason, not the secrets.
	var logs strings.Builder
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://archivist:s3cret@" + ln.Addr().String() + "/cdx?apikey=KEY123"
	ln.Close()
	down, err := dedup.NewCDX(dedup.CDXOptions{URL: closed, Timeout: 2 * time.Second},
		slog.New(slog.NewTextHandler(&logs, nil)), nil)
	require.NoError(t, err)
	defer down.Close()
	_, err = down.Lookup(context.Background(), "sha1:"+b32(sha1Of("x")), "http://example.com/")
	require.Error(t, err)
	require.Contains(t, logs.String(), "cdx server dedup lookup failed")
	require.NotContains(t, logs.String(), "s3cret")
	require.NotContains(t, logs.String(), "KEY123")
	require.NotContains(t, err.Error(), "KEY123")
}

// TestCDXCircuit: a CDX server that failed three times in a row is not
// asked for a while (lookups fail at once as circuit_open); after the
// cool-down one query probes it, and an answer closes the circuit.
func TestCDXCircuit(t *testing.T) {
	var asked atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		// No capture of that URL: an empty answer.
	}))
	t.Cleanup(srv.Close)
	c, reg := newCDX(t, srv.URL, nil)
	digest := "sha1:" + b32(sha1Of("x"))
	for i := range 3 {
		_, err := c.Lookup(context.Background(), digest, fmt.Sprintf("http://example.com/%d", i))
		require.Error(t, err)
	}
	require.Equal(t, "open", c.Status()["server"])
	_, err := c.Lookup(context.Background(), digest, "http://example.com/3")
	require.ErrorContains(t, err, "circuit_open")
	require.Equal(t, int64(3), asked.Load(), "an open circuit asks nothing")
	require.Equal(t, 1.0, cdxErrors(t, reg, "circuit_open"))

	failing.Store(false)
	require.Eventually(t, func() bool {
		_, err := c.Lookup(context.Background(), digest, "http://example.com/4")
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "the probe after the cool-down closes the circuit")
	require.Equal(t, "closed", c.Status()["server"])
}
