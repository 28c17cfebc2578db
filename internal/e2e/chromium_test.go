//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"image/color"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// chromiumFlags keep the browser off the network and quiet: no background
// services, component or Safe Browsing updates, sync, metrics or crash
// uploads, and a resolver that fails every name but 127.0.0.1 without
// asking DNS. Chromium 156 still tries clients2.google.com,
// update.googleapis.com, accounts.google.com and redirector.gvt1.com
// despite the flags; proxyBypass keeps those away from the proxy (which
// would resolve and fetch them), and the test fails on any record of a URL
// the origin did not serve.
var chromiumFlags = []string{
	"--headless=new",
	"--no-sandbox", // CI runs as root
	"--disable-gpu",
	"--disable-dev-shm-usage",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-default-apps",
	"--disable-extensions",
	"--disable-component-extensions-with-background-pages",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--disable-client-side-phishing-detection",
	"--disable-domain-reliability",
	"--disable-breakpad",
	"--disable-crash-reporter",
	"--no-pings",
	"--metrics-recording-only",
	"--safebrowsing-disable-auto-update",
	"--password-store=basic",
	"--use-mock-keychain",
	"--disable-features=OptimizationHints,OptimizationGuideModelDownloading,Translate,MediaRouter," +
		"DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater," +
		"InterestFeedContentSuggestions,PrivacySandboxSettings4,NetworkTimeServiceQuerying," +
		"SafeBrowsingEnhancedProtection,HttpsUpgrades",
	`--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`,
}

// proxyBypass is the --proxy-bypass-list: "<-loopback>" drops Chromium's
// implicit loopback bypass, so 127.0.0.1 goes through the proxy; then every
// host name holding a letter (all of them but IP literals) bypasses the
// proxy, goes direct, and fails in the resolver (--host-resolver-rules)
// without a DNS query. A PAC script cannot do this: Chromium never asks it
// about loopback URLs.
func proxyBypass() string {
	rules := []string{"<-loopback>"}
	for c := 'a'; c <= 'z'; c++ {
		rules = append(rules, "*"+string(c)+"*")
	}
	return strings.Join(rules, ";")
}

// page is the origin's site: a page with a stylesheet, a script, two
// images and a favicon; the script fetches a JSON document and writes what
// it says into the page.
type page struct {
	token string // what the JSON says, so the DOM shows the fetch happened
	files map[string]struct {
		ctype string
		body  []byte
	}
}

func newPage(t *testing.T) *page {
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := &page{token: "xhr-" + hex.EncodeToString(b[:])}
	p.files = map[string]struct {
		ctype string
		body  []byte
	}{
		"/": {"text/html; charset=utf-8", []byte(`<!doctype html>
<html><head><meta charset="utf-8"><title>warcproxy e2e</title>
<link rel="stylesheet" href="/static/style.css">
<link rel="icon" href="/favicon.ico" type="image/png">
</head><body>
<h1>warcproxy e2e</h1>
<img src="/img/red.png" alt="red" width="16" height="16">
<img src="/img/blue.png" alt="blue" width="16" height="16">
<p id="result">waiting</p>
<script src="/static/app.js"></script>
</body></html>
`)},
		"/static/style.css": {"text/css", []byte("body { font-family: sans-serif; }\nh1 { color: #336; }\n")},
		"/static/app.js": {"application/javascript", []byte(`fetch("/api/data.json", {headers: {"Accept": "application/json"}})
  .then((r) => r.json())
  .then((d) => { document.getElementById("result").textContent = "fetched:" + d.token; })
  .catch((e) => { document.getElementById("result").textContent = "failed:" + e; });
`)},
		"/api/data.json": {"application/json", fmt.Appendf(nil, `{"token":%q}`, p.token)},
		"/img/red.png":   {"image/png", pngOf(t, color.RGBA{R: 255, A: 255}, 16)},
		"/img/blue.png":  {"image/png", pngOf(t, color.RGBA{B: 255, A: 255}, 16)},
		"/favicon.ico":   {"image/png", pngOf(t, color.RGBA{G: 255, A: 255}, 16)},
	}
	return p
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := p.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.ctype)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(f.body)
}

// trustCA makes a fresh NSS database under home (Chromium reads
// $HOME/.pki/nssdb on Linux) that trusts the proxy's CA for TLS servers.
func trustCA(t *testing.T, certutil, home, caFile string) {
	t.Helper()
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	// certutil wants one certificate; the file may hold the key as well.
	var cert []byte
	for rest := pemData; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			cert = pem.EncodeToMemory(blk)
			break
		}
	}
	if cert == nil {
		t.Fatalf("no certificate in %s", caFile)
	}
	crt := filepath.Join(home, "warcproxy-ca.crt")
	if err := os.WriteFile(crt, cert, 0o644); err != nil {
		t.Fatal(err)
	}
	db := "sql:" + filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(filepath.Join(home, ".pki", "nssdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", db, "--empty-password"},
		{"-A", "-d", db, "-t", "C,,", "-n", "warcproxy test CA", "-i", crt},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestChromium loads an HTTPS page with its subresources and a fetch() in
// headless Chromium through the proxy, which intercepts TLS with its own
// CA, and checks that every exchange the origin answered is in the WARCs,
// which verify and index cleanly for replay.
func TestChromium(t *testing.T) {
	chromium := needChromium(t)
	certutil := needTool(t, "libnss3-tools", "certutil")

	site := newPage(t)
	var log served
	origin := httptest.NewUnstartedServer(logged(&log, site))
	// The proxy dials the origin when it answers CONNECT; a tunnel Chromium
	// opens ahead of need and closes unused shows here as a TLS handshake
	// EOF, which goes to the test log rather than stderr.
	origin.Config.ErrorLog = stdlog.New(testLog{t}, "origin: ", 0)
	origin.StartTLS()
	defer origin.Close()
	p := proxytest.Start(t, nil)

	home := t.TempDir()
	trustCA(t, certutil, home, p.App.CACertFile())

	dom, stderr := dumpDOM(t, chromium, home, p.URL.String(), origin.URL+"/")
	if want := `<p id="result">fetched:` + site.token + `</p>`; !strings.Contains(dom, want) {
		t.Fatalf("the DOM does not show the fetch result %q:\n%s\nchromium stderr:\n%s", want, dom, stderr)
	}

	h2Streams := oneMetric(t, p, "warcproxy_proxy_http2_streams_total")
	p.Stop()
	counts := log.counts()
	t.Logf("origin served %v", counts)
	served := 0
	for _, n := range counts {
		served += n
	}
	if h2Streams != float64(served) {
		t.Errorf("Chromium sent %v of the %d requests the origin served over HTTP/2, want all", h2Streams, served)
	}
	for _, must := range []string{"/", "/static/style.css", "/static/app.js", "/api/data.json", "/img/red.png", "/img/blue.png"} {
		if counts[must] == 0 {
			t.Errorf("the origin never served %s", must)
		}
	}
	want := make(map[string]int, len(counts))
	for path, n := range counts {
		want[origin.URL+path] = n
	}
	recs := warccheck.Dir(t, p.Dir)
	checkCaptures(t, recs, want)
	for _, r := range recs {
		if r.Type == "request" && r.TargetURI == origin.URL+"/" &&
			!bytes.Contains(r.Block, []byte("Chrome/")) {
			t.Errorf("request record for / does not carry Chromium's User-Agent:\n%s", r.Block)
		}
	}
	cdxIndex(t, p.Dir, recs)
}

// needChromium returns the browser to run, or skips (fails under CI=true).
// The Debian package's /usr/bin/chromium is a shell wrapper that adds
// Google API keys and extensions; the binary itself is used when found.
func needChromium(t *testing.T) string {
	t.Helper()
	return needTool(t, "chromium", os.Getenv("WARCPROXY_TEST_CHROMIUM"),
		"/usr/lib/chromium/chromium", "chromium", "chromium-browser")
}

// dumpDOM loads url in headless Chromium through the proxy at proxyURL,
// with home as its $HOME (where trustCA put the NSS database), runs the
// page's timers and fetches within a virtual-time budget, and returns the
// DOM it then holds, and what Chromium wrote on stderr.
func dumpDOM(t *testing.T, chromium, home, proxyURL, url string) (dom, stderr string) {
	t.Helper()
	args := append([]string{}, chromiumFlags...)
	args = append(args,
		"--user-data-dir="+filepath.Join(home, "profile"),
		"--proxy-server="+proxyURL,
		"--proxy-bypass-list="+proxyBypass(),
		"--virtual-time-budget=15000", // run timers and the fetch before dumping
		"--dump-dom",
		url,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, args...)
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"LANG=C.UTF-8",
	}
	// Chromium's zygote and renderers are its children: on a timeout the
	// whole process group goes, not only the browser process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	t.Logf("chromium ran %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("chromium: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// testLog writes to the test log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
