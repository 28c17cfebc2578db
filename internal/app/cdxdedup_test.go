package app_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/cdxserver"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// cdxOrigin serves pages whose bodies stay the same across crawls, and one
// (/changed) whose body changes with the crawl number.
func cdxOrigin(t *testing.T, crawl *atomic.Int32) (plain, tls *httptest.Server) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>"+strings.Repeat("unchanged page ", 50)+"</body></html>")
		case "/same.js":
			w.Header().Set("Content-Type", "application/javascript")
			fmt.Fprint(w, "console.log('unchanged script');")
		case "/changed":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "news of crawl %d", crawl.Load())
		default:
			http.NotFound(w, r)
		}
	})
	plain, tls = httptest.NewServer(h), httptest.NewTLSServer(h)
	t.Cleanup(plain.Close)
	t.Cleanup(tls.Close)
	return plain, tls
}

// crawl fetches urls through p and returns the bodies the client got.
func crawl(t *testing.T, p *proxytest.Proxy, tls *httptest.Server, urls []string) map[string]string {
	t.Helper()
	c := p.Client(tls.Certificate())
	got := map[string]string{}
	for _, u := range urls {
		resp, err := c.Get(u)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		got[u] = string(b)
		p.Settle()
	}
	return got
}

// byURI returns the response and revisit records by target URI, in the
// order written.
func byURI(recs []warccheck.Record) map[string][]warccheck.Record {
	out := map[string][]warccheck.Record{}
	for _, r := range recs {
		if r.Type == "response" || r.Type == "revisit" {
			out[r.TargetURI] = append(out[r.TargetURI], r)
		}
	}
	return out
}

// TestCDXServerDedupAgainstRealIndex: crawl once, index the WARCs with
// warcio.js's own cdx-index and serve that index as a CDX server; crawl
// again with --cdxserver-dedup. Unchanged resources become revisits of the
// first crawl's captures (URL and date, no record ID), changed ones are
// full responses, and both readers accept every file.
func TestCDXServerDedupAgainstRealIndex(t *testing.T) {
	var n atomic.Int32
	n.Store(1)
	plain, tls := cdxOrigin(t, &n)
	urls := []string{plain.URL + "/same.html", plain.URL + "/same.js", plain.URL + "/changed", tls.URL + "/same.html", tls.URL + "/changed"}
	// The first crawl has a local dedup store, so its https /same.html is a
	// revisit of the plain one: the archive holds no original of that URL,
	// and warcprox's query asks for originals only (no warc/revisit).
	unchanged := map[string]bool{urls[0]: true, urls[1]: true}

	first := proxytest.Start(t, nil)
	crawl(t, first, tls, urls)
	first.Stop()
	originals := byURI(warccheck.Dir(t, first.Dir))
	warcs, err := filepath.Glob(filepath.Join(first.Dir, "*.warc.gz"))
	require.NoError(t, err)
	index := cdxserver.Index(t, warcs...)
	require.Len(t, index, len(urls), "warcio.js indexes one response or revisit per URL")
	require.Equal(t, "warc/revisit", findCapture(t, index, urls[3])["mime"])

	for _, tt := range []struct {
		name  string
		local bool // --dedup-db kept (proxytest's embedded file), else none
	}{
		{"cdx server only, as warcprox", false},
		{"local store first", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := cdxserver.New(t, index)
			n.Store(2)
			second := proxytest.Start(t, func(c *config.Config) {
				c.CDXServerDedup = srv.URL + "/cdx/search"
				if !tt.local {
					c.DedupDB = "none"
				}
			})
			got := crawl(t, second, tls, urls)
			require.Equal(t, "news of crawl 2", got[urls[2]])
			// Fetched again in the same crawl: an unchanged page and a
			// changed one.
			again := crawl(t, second, tls, []string{urls[0], urls[2]})
			require.Equal(t, got[urls[0]], again[urls[0]])
			require.Equal(t, got[urls[2]], again[urls[2]])
			mfs := second.Metrics(t)
			hits := metricValue(t, mfs, "warcproxy_dedup_cdx_lookups_total", "result", "hit")
			misses := metricValue(t, mfs, "warcproxy_dedup_cdx_lookups_total", "result", "miss")
			errs := metricValue(t, mfs, "warcproxy_dedup_cdx_lookups_total", "result", "error")
			second.Stop()

			recs := byURI(warccheck.Dir(t, second.Dir))
			for _, u := range urls {
				r, orig := recs[u][0], originals[u][0]
				if tt.local && u == urls[4] {
					// The same news as the plain /changed just fetched:
					// a local hit, with the record ID.
					require.Equal(t, "revisit", r.Type)
					require.Equal(t, recs[urls[2]][0].ID, r.Header["WARC-Refers-To"])
					continue
				}
				if !unchanged[u] {
					require.Equal(t, "response", r.Type, u)
					continue
				}
				requireCDXRevisit(t, r, orig)
			}
			// The unchanged page again. The archive's capture again, or,
			// with a local store, the https copy this crawl wrote in full
			// (its first fetch here was itself a revisit, so not saved).
			require.Len(t, recs[urls[0]], 2)
			if tt.local {
				r := recs[urls[0]][1]
				require.Equal(t, "revisit", r.Type)
				require.Equal(t, recs[urls[3]][0].ID, r.Header["WARC-Refers-To"])
				require.Equal(t, urls[3], r.Header["WARC-Refers-To-Target-URI"])
			} else {
				requireCDXRevisit(t, recs[urls[0]][1], originals[urls[0]][0])
			}
			// The changed page again: only a local store knows this
			// crawl's response; the archive has the old payload.
			require.Len(t, recs[urls[2]], 2)
			if tt.local {
				r := recs[urls[2]][1]
				require.Equal(t, "revisit", r.Type)
				require.Equal(t, recs[urls[2]][0].ID, r.Header["WARC-Refers-To"])
				require.Equal(t, urls[2], r.Header["WARC-Refers-To-Target-URI"])
			} else {
				require.Equal(t, "response", recs[urls[2]][1].Type)
			}

			for _, q := range srv.Queries() {
				require.Equal(t, "timestamp,digest", q.Get("fl"))
				require.Equal(t, "!mimetype:warc/revisit", q.Get("filter"))
				require.Equal(t, "-1", q.Get("limit"))
			}
			// Each URL is asked once, when its request arrives (ahead of
			// the payload, even if the local store then answers); the
			// lookups join that query or find its answer cached.
			hitWant, missWant := 3.0, 4.0
			if tt.local {
				hitWant, missWant = 2, 2
			}
			require.Len(t, srv.Queries(), len(urls))
			require.Equal(t, hitWant, hits)
			require.Equal(t, missWant, misses)
			require.Equal(t, 0.0, errs)

			// A replay tool's indexer sees the revisits as such.
			warcs, err := filepath.Glob(filepath.Join(second.Dir, "*.warc.gz"))
			require.NoError(t, err)
			revisits := 0
			for _, c := range cdxserver.Index(t, warcs...) {
				if c["mime"] == "warc/revisit" {
					revisits++
				}
			}
			wantRevisits := 3
			if tt.local {
				wantRevisits = 5
			}
			require.Equal(t, wantRevisits, revisits)
		})
	}
}

// requireCDXRevisit checks that r is a revisit of orig found through the
// CDX server: its URL and date, no record ID, the same payload digest.
func requireCDXRevisit(t *testing.T, r, orig warccheck.Record) {
	t.Helper()
	require.Equal(t, "revisit", r.Type, r.TargetURI)
	require.Equal(t, orig.TargetURI, r.Header["WARC-Refers-To-Target-URI"])
	require.Equal(t, orig.Header["WARC-Date"], r.Header["WARC-Refers-To-Date"])
	require.NotContains(t, r.Header, "WARC-Refers-To", "a CDX hit has no record ID")
	require.Equal(t, orig.Header["WARC-Payload-Digest"], r.Header["WARC-Payload-Digest"])
	require.Equal(t, "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest", r.Header["WARC-Profile"])
}

// TestCDXServerDedupFaults: whatever the CDX server does wrong, the
// capture is written in full, the client gets the whole body, and the
// failure is counted by reason.
func TestCDXServerDedupFaults(t *testing.T) {
	var n atomic.Int32
	plain, tls := cdxOrigin(t, &n)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + l.Addr().String() + "/cdx"
	require.NoError(t, l.Close())
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	for _, tt := range []struct {
		name, reason string
		h            http.HandlerFunc
	}{
		{"down", "connect", nil},
		{"slow", "timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}},
		{"500", "status", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}},
		{"html", "bad_answer", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>\n<body>Maintenance</body>\n</html>\n")
		}},
		{"huge", "too_large", func(w http.ResponseWriter, r *http.Request) {
			line := []byte("20240102030405 " + strings.Repeat("A", 32) + "\n")
			for i := 0; i < 1<<20 && r.Context().Err() == nil; i++ {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := closed
			if tt.h != nil {
				s := httptest.NewServer(tt.h)
				t.Cleanup(s.Close)
				url = s.URL
			}
			p := proxytest.Start(t, func(c *config.Config) {
				c.CDXServerDedup = url
				c.CDXServerDedupTimeout = 300 * time.Millisecond
				c.DedupDB = "none"
			})
			got := crawl(t, p, tls, []string{plain.URL + "/same.html", tls.URL + "/same.js"})
			require.Contains(t, got[plain.URL+"/same.html"], "unchanged page")
			require.Equal(t, "console.log('unchanged script');", got[tls.URL+"/same.js"])
			// Each URL's lookup fails; the prefetch's and the lookup's queries
			// both count towards the circuit, so the second may be skipped.
			// On a loaded machine reading a huge answer may take the whole
			// --cdxserver-dedup-timeout instead.
			m := p.Metrics(t)
			failed := map[string]float64{}
			for _, c := range metricFamily(t, m, "warcproxy_dedup_cdx_errors_total").GetMetric() {
				failed[c.GetLabel()[0].GetValue()] = c.GetCounter().GetValue()
			}
			n := failed[tt.reason] + failed["circuit_open"]
			if tt.reason == "too_large" {
				n += failed["timeout"]
			}
			require.Equal(t, 2.0, n, "%v", failed)
			require.Positive(t, metricValue(t, m, "warcproxy_dedup_cdx_errors_total", "reason", tt.reason))
			p.Stop()
			for u, rs := range byURI(warccheck.Dir(t, p.Dir)) {
				require.Equal(t, "response", rs[0].Type, u)
			}
		})
	}
}

func findCapture(t *testing.T, index []cdxserver.Capture, u string) cdxserver.Capture {
	t.Helper()
	for _, c := range index {
		if c["url"] == u {
			return c
		}
	}
	t.Fatalf("%s not in the index", u)
	return nil
}
