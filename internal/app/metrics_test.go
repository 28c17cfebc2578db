package app_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// TestMetricsGoldenAndLint: every metric the proxy exports passes
// Prometheus' linter, and the list of names and types matches the golden
// file (docs/metrics.md documents each; dashboards and alerts depend on them).
func TestMetricsGoldenAndLint(t *testing.T) {
	// Every optional component that registers metrics is on; the CDX
	// server is never asked (no traffic), so its address need not answer.
	// The routes are never dialed either.
	p := proxytest.Start(t, func(c *config.Config) {
		c.CDXServerDedup = "http://127.0.0.1:1/cdx"
		c.SOCKSProxy, c.OnionTorSOCKSProxy = "127.0.0.1:1", "127.0.0.1:1"
	})
	mfs := p.Metrics(t)
	problems, err := testutil.GatherAndLint(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil }))
	require.NoError(t, err)
	require.Empty(t, problems, "promlint")

	var lines []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "go_") || strings.HasPrefix(mf.GetName(), "process_") || strings.HasPrefix(mf.GetName(), "promhttp_") {
			continue // the standard collectors: present, not ours to list
		}
		lines = append(lines, mf.GetName()+" "+strings.ToLower(mf.GetType().String()))
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got, "metric names changed: update docs/metrics.md, then run go test ./internal/app -update")

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	require.NoError(t, err)
	for _, l := range lines {
		name := strings.Fields(l)[0]
		require.Contains(t, string(doc), "`"+name+"`", "docs/metrics.md has no row for %s", name)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	require.True(t, names["go_goroutines"] && names["process_resident_memory_bytes"], "Go and process collectors")
}

// TestMetricsCountWhatHappened: after a few exchanges (archived, not
// archived, failed upstream) the counters say so, on /metrics of the proxy
// port and of --metrics-address, and /status has warcprox's rates.
func TestMetricsCountWhatHappened(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 1000))
	}))
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.MethodFilter = []string{"GET"}
		c.MetricsAddress = "127.0.0.1:0"
	})
	client := p.Client()
	for i := range 5 {
		resp, err := client.Get(fmt.Sprintf("%s/get/%d", origin.URL, i))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// The original is a dedup candidate once it is on disk.
		p.Settle()
	}
	resp, err := client.Post(origin.URL+"/post", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	resp, err = client.Get(closed.URL + "/refused")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 502, resp.StatusCode)

	// With --metrics-address, /metrics and /status move there: the proxy
	// port no longer serves them.
	for _, path := range []string{"/metrics", "/status"} {
		resp, err := http.Get(p.URL.String() + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 404, resp.StatusCode)
		require.Contains(t, string(b), "--metrics-address")
	}
	// A client can have its whole response a moment before the handler
	// counts the capture: poll.
	for _, u := range []string{"http://" + p.App.MetricsAddr().String() + "/metrics"} {
		want := []string{
			// The same body five times: one response, then revisits.
			`warcproxy_proxy_captures_total{result="archived"} 1`,
			`warcproxy_proxy_captures_total{result="revisit"} 4`,
			`warcproxy_dedup_lookups_total{result="hit"} 4`,
			`warcproxy_proxy_captures_total{result="not_archived"} 1`,
			`warcproxy_upstream_errors_total{kind="refused"} 1`,
			"warcproxy_upstream_urls_total 6",
			"go_goroutines",
		}
		var body string
		require.Eventually(t, func() bool {
			resp, err := http.Get(u)
			if err != nil || resp.StatusCode != 200 {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			for _, w := range want {
				if !strings.Contains(body, w) {
					return false
				}
			}
			return true
		}, 10*time.Second, 20*time.Millisecond, "%s lacks one of %q:\n%s", u, want, body)
	}
	resp, err = http.Get("http://" + p.App.MetricsAddr().String() + "/status")
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	for _, k := range []string{"rates_1min", "rates_5min", "rates_15min"} {
		r, ok := st[k].(map[string]any)
		require.True(t, ok, k)
		require.Contains(t, r, "urls_per_sec")
		require.Contains(t, r, "warc_bytes_per_sec")
		require.Contains(t, r, "actual_elapsed")
	}

	// Once every capture is written, the last scrape (/metrics closes
	// with the proxy); then the files.
	p.Settle()
	mfs := p.Metrics(t)
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	n := map[string]int{}
	for _, r := range recs {
		n[r.Type]++
	}
	require.Equal(t, 1, n["response"])
	require.Equal(t, 4, n["revisit"])
	// After the drain: the writer's counters match the files.
	require.Equal(t, float64(1), metricValue(t, mfs, "warcproxy_writer_records_total", "type", "response"))
	require.Equal(t, float64(4), metricValue(t, mfs, "warcproxy_writer_records_total", "type", "revisit"))
	require.Equal(t, float64(5), metricValue(t, mfs, "warcproxy_writer_records_total", "type", "request"))
	require.Equal(t, float64(5), metricValue(t, mfs, "warcproxy_writer_captures_total", "result", "written"))
	var size int64
	entries, _ := os.ReadDir(p.Dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".warc.gz") {
			fi, _ := e.Info()
			size += fi.Size()
		}
	}
	require.Equal(t, float64(size), metricValue(t, mfs, "warcproxy_writer_bytes_total", "", ""))
	h := metricFamily(t, mfs, "warcproxy_proxy_capture_duration_seconds")
	require.Equal(t, uint64(5), h.GetMetric()[0].GetHistogram().GetSampleCount())
}

// metricFamily finds a family in a scrape (proxytest's Metrics).
func metricFamily(t *testing.T, mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// metricValue is the value of the counter or gauge name whose label has
// value (the first one with no label given).
func metricValue(t *testing.T, mfs []*dto.MetricFamily, name, label, value string) float64 {
	t.Helper()
	for _, m := range metricFamily(t, mfs, name).GetMetric() {
		match := label == ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				match = true
			}
		}
		if match {
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}

// TestPprofBehindFlag: the profiler is only on --metrics-address, and only
// with --pprof.
func TestPprofBehindFlag(t *testing.T) {
	_, err := config.Parse([]string{"--pprof"}, io.Discard)
	require.ErrorContains(t, err, "--metrics-address")

	p := proxytest.Start(t, func(c *config.Config) { c.MetricsAddress = "127.0.0.1:0"; c.Pprof = true })
	resp, err := http.Get("http://" + p.App.MetricsAddr().String() + "/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	resp, err = http.Get(p.URL.String() + "/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "never on the proxy port")

	q := proxytest.Start(t, func(c *config.Config) { c.MetricsAddress = "127.0.0.1:0" })
	resp, err = http.Get("http://" + q.App.MetricsAddr().String() + "/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 404, resp.StatusCode, "off without --pprof")
}
