//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/stats"
)

// A browser crawl through the proxy with --jobs: Chromium's own requests,
// a service worker's included, carry no Warcprox-Meta, and still belong to
// the job whose proxy credentials (page.authenticate) or port the browser
// uses. These tests drive Debian's Chromium through puppeteer-core
// (crawl.mjs), a browser context per job, as docs/quickstart.md tells.

// jobsFile writes a jobs file into a temp directory and returns its path.
func jobsFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startJobsProxy starts a proxy with the jobs file at path, /status and
// /metrics on a listener of their own (so that reading them needs no job's
// credentials), every log line kept.
func startJobsProxy(t *testing.T, path string) *proxytest.Proxy {
	t.Helper()
	return proxytest.StartLogged(t, func(c *config.Config) {
		c.Jobs = path
		c.MetricsAddress = "127.0.0.1:0"
	})
}

// checkJobRecords checks that each section's records, and nothing else,
// are in WARC files named for the section's job (prefix → "jobA-..."):
// the service worker's fetch of the section's from-sw.json among them, as
// a response. Sections not in prefixOf must have no record at all.
func checkJobRecords(t *testing.T, site *swSite, recs []warccheck.Record, prefixOf map[string]string) {
	t.Helper()
	fetchedBy := make(map[string]bool)
	for _, r := range recs {
		if r.Type == "warcinfo" {
			continue
		}
		sec, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(r.TargetURI, site.srv.URL), "/"), "/")
		want, ok := prefixOf[sec]
		switch {
		case !ok:
			t.Errorf("%s record of %s in %s: nothing of section %q should be recorded", r.Type, r.TargetURI, r.File, sec)
		case !strings.HasPrefix(r.File, want+"-"):
			t.Errorf("%s record of %s is in %s, want a file of prefix %s", r.Type, r.TargetURI, r.File, want)
		}
		if r.Type == "response" && r.TargetURI == site.fetched(sec) {
			fetchedBy[sec] = true
		}
	}
	for sec := range prefixOf {
		if !fetchedBy[sec] {
			t.Errorf("no response record of %s, which section %s's service worker fetched", site.fetched(sec), sec)
		}
	}
}

// checkWorkerFirst checks that the origin served a section's page, its
// service worker and then the worker's fetch, and nothing in between: the
// first request the browser made on its own, with no header a page could
// set, is the one whose attribution is tested.
func checkWorkerFirst(t *testing.T, site *swSite, sec string) {
	t.Helper()
	var got []string
	for _, p := range site.log.snapshot() {
		if strings.HasPrefix(p, "/"+sec+"/") {
			got = append(got, p)
		}
	}
	want := []string{"/" + sec + "/", "/" + sec + "/sw.js", "/" + sec + "/from-sw.json"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("origin served section %s as %q, want %q", sec, got, want)
	}
}

// bucketURLs reads, after the proxy stopped, how many URLs each stats
// bucket counted in total, from the database the proxy wrote.
func bucketURLs(t *testing.T, p *proxytest.Proxy, buckets ...string) map[string]int64 {
	t.Helper()
	sp, err := store.Parse(p.Config.StatsDB)
	if err != nil {
		t.Fatal(err)
	}
	var h store.Handles
	st, err := stats.Open(sp, &h)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Get(context.Background(), buckets)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int64, len(buckets))
	for _, b := range buckets {
		out[b] = got[b].Total.URLs
	}
	return out
}

// jobRequests is /status's count of requests per job.
func jobRequests(t *testing.T, p *proxytest.Proxy) map[string]float64 {
	t.Helper()
	out := make(map[string]float64)
	jobs, _ := p.Status(t)["jobs"].(map[string]any)
	for name, v := range jobs {
		if m, ok := v.(map[string]any); ok {
			out[name], _ = m["requests"].(float64)
		}
	}
	return out
}

// jobRequestsMetric is warcproxy_job_requests_total per crawl_job.
func jobRequestsMetric(t *testing.T, p *proxytest.Proxy) map[string]float64 {
	t.Helper()
	out := make(map[string]float64)
	for _, mf := range p.Metrics(t) {
		if mf.GetName() != "warcproxy_job_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "crawl_job" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func authFailures(t *testing.T, p *proxytest.Proxy) float64 {
	t.Helper()
	n, _ := p.Status(t)["proxy_auth_failures"].(float64)
	return n
}

// TestBrowserJobByCredentials: Chromium given a job's proxy credentials
// with page.authenticate loads a page whose only script registers a
// service worker, which fetches a document before the page fetches
// anything; that fetch, made by the browser with no Warcprox-Meta, lands
// in the job's WARC prefix and counts in the job's stats bucket. A second
// browser context with another job's credentials records into that job's
// prefix; a wrong password gets 407s, is counted, and records nothing.
func TestBrowserJobByCredentials(t *testing.T) {
	site := startSWSite(t, "a", "b", "bad")
	const passA, passB, wrong = "secret-a-7q2", "secret-b-9x4", "not-the-password-3k8"
	p := startJobsProxy(t, jobsFile(t, fmt.Sprintf(`allow-anonymous: false
jobs:
  - name: jobA
    password: %s
    warcprox-meta:
      warc-prefix: jobA
      stats: {buckets: [bucketA]}
  - name: jobB
    password: %s
    warcprox-meta:
      warc-prefix: jobB
      stats: {buckets: [bucketB]}
`, passA, passB)))
	c := needCrawler(t, p.App.CACertFile())

	before := authFailures(t, p)
	rep := c.crawl(t, p.URL.String(), site.visit("bad", "jobA", wrong))
	if v := rep.Visits[0]; v.Status != 407 || strings.HasPrefix(v.Result, "sw:") {
		t.Errorf("with a wrong password the page's status is %d and it shows %q, want the proxy's 407", v.Status, v.Result)
	}
	if after := authFailures(t, p); after <= before {
		t.Errorf("proxy_auth_failures %v after the wrong password, %v before: the 407 is not counted", after, before)
	}

	rep = c.crawl(t, p.URL.String(), site.visit("a", "jobA", passA), site.visit("b", "jobB", passB))
	t.Logf("Chromium %s, puppeteer-core %s", rep.Chromium, rep.Puppeteer)
	for i, sec := range []string{"a", "b"} {
		if v := rep.Visits[i]; v.Result != "sw:"+site.tokens[sec] || v.Status != 200 {
			t.Errorf("section %s: page status %d, shows %q (error %q), want 200 showing %q",
				sec, v.Status, v.Result, v.Error, "sw:"+site.tokens[sec])
		}
	}
	p.Settle()
	requests, metric := jobRequests(t, p), jobRequestsMetric(t, p)
	p.Stop()

	t.Logf("origin served %q", site.log.snapshot())
	checkWorkerFirst(t, site, "a")
	checkWorkerFirst(t, site, "b")
	if n := site.log.counts()["/bad/"]; n != 0 {
		t.Errorf("the origin served the page %d times to a wrong password", n)
	}
	for job, min := range map[string]float64{"jobA": 3, "jobB": 3} {
		if requests[job] < min {
			t.Errorf("/status counts %v requests of %s, want at least %v (its page, worker and the worker's fetch)", requests[job], job, min)
		}
		if metric[job] != requests[job] {
			t.Errorf("warcproxy_job_requests_total{crawl_job=%q} is %v, /status says %v", job, metric[job], requests[job])
		}
	}
	recs := warccheck.Dir(t, p.Dir)
	checkJobRecords(t, site, recs, map[string]string{"a": "jobA", "b": "jobB"})
	want := make(map[string]int)
	for path, n := range site.log.counts() {
		want[site.srv.URL+path] = n
	}
	checkCaptures(t, recs, want)
	if got := bucketURLs(t, p, "bucketA", "bucketB"); got["bucketA"] != 3 || got["bucketB"] != 3 {
		t.Errorf("stats buckets count %v URLs, want 3 each (page, worker, the worker's fetch)", got)
	}
	for _, secret := range []string{passA, passB, wrong} {
		if strings.Contains(p.Log(), secret) {
			t.Errorf("the proxy's log shows a password")
		}
		for _, r := range recs {
			if strings.Contains(string(r.Block), secret) {
				t.Errorf("%s record of %s holds a password", r.Type, r.TargetURI)
			}
		}
	}
}

// TestBrowserJobByPort: a second Chromium pointed at a job's own port,
// with no credentials at all, records into that job's prefix and bucket;
// without credentials on the main port (allow-anonymous off) nothing is
// recorded.
func TestBrowserJobByPort(t *testing.T) {
	site := startSWSite(t, "a", "c", "anon")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	jobPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := startJobsProxy(t, jobsFile(t, fmt.Sprintf(`jobs:
  - name: jobA
    password: secret-a
    warcprox-meta:
      warc-prefix: jobA
      stats: {buckets: [bucketA]}
  - name: jobC
    port: %d
    warcprox-meta:
      warc-prefix: jobC
      stats: {buckets: [bucketC]}
`, jobPort)))
	c := needCrawler(t, p.App.CACertFile())

	rep := c.crawl(t, fmt.Sprintf("http://127.0.0.1:%d", jobPort), site.visit("c", "", ""))
	if v := rep.Visits[0]; v.Result != "sw:"+site.tokens["c"] || v.Status != 200 {
		t.Errorf("through jobC's port: page status %d, shows %q (error %q), want 200 showing %q",
			v.Status, v.Result, v.Error, "sw:"+site.tokens["c"])
	}
	rep = c.crawl(t, p.URL.String(), site.visit("anon", "", ""))
	if v := rep.Visits[0]; strings.HasPrefix(v.Result, "sw:") {
		t.Errorf("without credentials on the main port the page still loaded: %+v", v)
	}
	p.Settle()
	requests := jobRequests(t, p)
	p.Stop()

	t.Logf("origin served %q", site.log.snapshot())
	checkWorkerFirst(t, site, "c")
	if requests["jobC"] < 3 {
		t.Errorf("/status counts %v requests of jobC, want at least 3", requests["jobC"])
	}
	recs := warccheck.Dir(t, p.Dir)
	checkJobRecords(t, site, recs, map[string]string{"c": "jobC"})
	if got := bucketURLs(t, p, "bucketA", "bucketC"); got["bucketA"] != 0 || got["bucketC"] != 3 {
		t.Errorf("stats buckets count %v URLs, want bucketC 3 (page, worker, the worker's fetch), bucketA 0", got)
	}
}

// TestBrowserJobWebSocket: a page crawled as jobA (page.authenticate)
// opens a WebSocket, over ws:// and over wss://. Chromium carries each
// socket in a tunnel of its own, whose CONNECT carries jobA's
// credentials, so the handshake, and the message record that goes to its
// prefix, land in jobA's files beside the page.
func TestBrowserJobWebSocket(t *testing.T) {
	node, script := needWebSocketOrigin(t)
	origins := []*wsOrigin{{Name: "plain"}, {Name: "tls", TLS: true}}
	startWSOrigins(t, node, script, origins)
	const pass = "secret-a-5m1"
	p := startJobsProxy(t, jobsFile(t, fmt.Sprintf(`allow-anonymous: false
jobs:
  - name: jobA
    password: %s
    warcprox-meta:
      warc-prefix: jobA
`, pass)))
	c := needCrawler(t, p.App.CACertFile())

	visits := make([]crawlVisit, len(origins))
	for i, o := range origins {
		visits[i] = crawlVisit{URL: o.pageURL(), WaitFor: "ws:closed 4001", Username: "jobA", Password: pass}
	}
	rep := c.crawl(t, p.URL.String(), visits...)
	p.Settle()
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)

	for i, o := range origins {
		t.Run(o.Name, func(t *testing.T) {
			if v := rep.Visits[i]; v.Result != "ws:closed 4001" {
				t.Fatalf("the page shows %q (error %q), want %q", v.Result, v.Error, "ws:closed 4001")
			}
			handshake := checkHandshakeRecords(t, o, recs)
			host := fmt.Sprintf("127.0.0.1:%d/", o.port)
			kinds := make(map[string]int)
			for _, r := range recs {
				if !strings.Contains(r.TargetURI, host) {
					continue
				}
				if !strings.HasPrefix(r.File, "jobA-") {
					t.Errorf("%s record of %s is in %s, want a file of jobA's prefix", r.Type, r.TargetURI, r.File)
				}
				switch {
				case r.Type == "resource" && r.TargetURI == o.socketURL():
					kinds["messages"]++
					if got := r.Header["WARC-Concurrent-To"]; got != handshake {
						t.Errorf("the message record names %q, the handshake's response is %s", got, handshake)
					}
				// Both origins serve the same page: the second is a revisit.
				case (r.Type == "response" || r.Type == "revisit") && r.TargetURI == o.pageURL():
					kinds["page"]++
				}
			}
			if kinds["messages"] != 1 || kinds["page"] != 1 {
				t.Errorf("%d message records of %s and %d captures of its page, want one each", kinds["messages"], o.socketURL(), kinds["page"])
			}
		})
	}
}
