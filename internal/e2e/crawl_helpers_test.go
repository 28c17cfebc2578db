//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
)

// crawler runs testdata/replayweb/crawl.mjs: puppeteer-core driving
// Debian's Chromium through the proxy, one browser context per visit, with
// the visit's proxy credentials given through page.authenticate.
type crawler struct {
	node, script, chromium string
	home                   string // $HOME, where trustCA puts the NSS database
}

// needCrawler returns a crawler whose Chromium trusts caFile, or skips the
// test (fails it under CI=true, where .ci/run installs everything).
func needCrawler(t *testing.T, caFile string) *crawler {
	t.Helper()
	chromium := needChromium(t)
	certutil := needTool(t, "libnss3-tools", "certutil")
	node := needTool(t, "nodejs", "node")
	dir, err := filepath.Abs(replayWebDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "puppeteer-core", "package.json")); err != nil {
		msg := fmt.Sprintf("puppeteer-core is not installed (%v): run `npm ci --prefix internal/e2e/%s`", err, replayWebDir)
		if inCI() {
			t.Fatalf("%s (.ci/run does)", msg)
		}
		t.Skip(msg)
	}
	c := &crawler{node: node, script: filepath.Join(dir, "crawl.mjs"), chromium: chromium, home: t.TempDir()}
	trustCA(t, certutil, c.home, caFile)
	return c
}

// crawlVisit is one page load, in a browser context of its own: the page
// must end up with #result starting with WaitFor.
type crawlVisit struct {
	URL      string `json:"url"`
	WaitFor  string `json:"waitFor"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// crawlReport mirrors crawl.mjs's output.
type crawlReport struct {
	Chromium  string `json:"chromium"`
	Puppeteer string `json:"puppeteer"`
	Visits    []struct {
		URL    string `json:"url"`
		Status int    `json:"status"`
		Error  string `json:"error"`
		Result string `json:"result"`
		// PageLog is the page's window.testLog, as JSON.
		PageLog   json.RawMessage `json:"pageLog"`
		ElapsedMs int64           `json:"elapsedMs"`
	} `json:"visits"`
}

// crawl makes the visits, in order, in one Chromium whose proxy is
// proxyURL (http://host:port, no credentials), and returns what each page
// showed.
func (c *crawler) crawl(t *testing.T, proxyURL string, visits ...crawlVisit) crawlReport {
	t.Helper()
	visitsJSON, err := json.Marshal(visits)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := json.Marshal(append(chromiumFlags[:len(chromiumFlags):len(chromiumFlags)],
		"--proxy-bypass-list="+proxyBypass()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, c.script,
		"--chromium", c.chromium,
		"--proxy", proxyURL,
		"--visits", string(visitsJSON),
		"--flags", string(flags),
		"--timeout", "20000",
	)
	cmd.Dir = filepath.Dir(c.script)
	cmd.Env = []string{
		"HOME=" + c.home,
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + c.home,
		"XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(c.home, ".cache"),
		"LANG=C.UTF-8",
	}
	// Chromium and its renderers are node's children: on a timeout the
	// whole process group goes, not only node.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("crawl.mjs ran %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("crawl.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var rep crawlReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("reading crawl.mjs output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if len(rep.Visits) != len(visits) {
		t.Fatalf("crawl.mjs reported %d visits, asked %d: %s", len(rep.Visits), len(visits), stdout.String())
	}
	for _, v := range rep.Visits {
		t.Logf("visit %s: status %d, %d ms, result %q, error %q", v.URL, v.Status, v.ElapsedMs, v.Result, v.Error)
	}
	return rep
}

// swSite is an HTTPS origin with one small site per section (/a/, /b/,
// ...): a page whose first and only script registers a service worker,
// the worker, and a JSON document only the worker fetches (with no header
// a page script could set), during its install. The page then asks the
// worker what it fetched and writes it into #result: "sw:" and the
// document, once the worker's fetch is done.
type swSite struct {
	srv    *httptest.Server
	log    served
	tokens map[string]string // section → what its JSON document says
}

// swPage registers sw.js as the page's first act: nothing else on the page
// fetches (the favicon is inline), so the worker's fetch is the first one
// the browser makes on its own.
const swPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>service worker</title>
<link rel="icon" href="data:,">
</head><body>
<p id="result">waiting</p>
<script>
const out = (s) => { document.getElementById("result").textContent = s; };
function ask(reg) {
  const ch = new MessageChannel();
  ch.port1.onmessage = (e) => e.data ? out(e.data) : setTimeout(() => ask(reg), 100);
  reg.active.postMessage("result?", [ch.port2]);
}
navigator.serviceWorker.register("sw.js")
  .then(() => navigator.serviceWorker.ready)
  .then(ask)
  .catch((e) => out("failed: " + e));
</script>
</body></html>
`

// swScript fetches from-sw.json while it installs, and answers the page's
// question with what it got.
const swScript = `let result = null;
self.addEventListener("install", (e) => {
  self.skipWaiting();
  e.waitUntil(fetch("from-sw.json", {cache: "no-store"})
    .then((r) => r.ok ? r.json().then((d) => { result = "sw:" + d.token; }) : (result = "failed: " + r.status))
    .catch((err) => { result = "failed: " + err; }));
});
self.addEventListener("message", (e) => e.ports[0].postMessage(result));
`

func startSWSite(t *testing.T, sections ...string) *swSite {
	t.Helper()
	s := &swSite{tokens: make(map[string]string, len(sections))}
	for _, sec := range sections {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.tokens[sec] = sec + "-" + hex.EncodeToString(b[:])
	}
	s.srv = httptest.NewUnstartedServer(logged(&s.log, s))
	// A tunnel Chromium opens ahead of need and closes unused shows as a
	// TLS handshake EOF: to the test log, not stderr.
	s.srv.Config.ErrorLog = stdlog.New(testLog{t}, "sw origin: ", 0)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *swSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sec, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	token, ok := s.tokens[sec]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch file {
	// Each section's page and worker differ by a comment, so that dedup
	// makes none of them a revisit of another section's.
	case "":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, "%s<!-- section %s -->\n", swPage, sec)
	case "sw.js":
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = fmt.Fprintf(w, "%s// section %s\n", swScript, sec)
	case "from-sw.json":
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"token":%q}`, token)
	default:
		http.NotFound(w, r)
	}
}

// page and fetched are the URLs of a section's page and of the document
// its service worker fetches.
func (s *swSite) page(sec string) string    { return s.srv.URL + "/" + sec + "/" }
func (s *swSite) fetched(sec string) string { return s.srv.URL + "/" + sec + "/from-sw.json" }

// visit is the crawl of a section: done when the page shows the token the
// worker fetched.
func (s *swSite) visit(sec, username, password string) crawlVisit {
	return crawlVisit{URL: s.page(sec), WaitFor: "sw:" + s.tokens[sec], Username: username, Password: password}
}
