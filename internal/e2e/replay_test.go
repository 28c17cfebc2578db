//go:build linux

// Chromium reads trusted roots from $HOME/.pki/nssdb only on Linux.

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"image/color"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestReplayWebPage records a small site with headless Chromium through
// the proxy, then replays what the proxy wrote in ReplayWeb.page, the
// replay tool archivists open WARCs and WACZs in, and checks the replayed
// page as a person would: its title, its text, the text its script writes,
// its stylesheet, and its images, one of them from an HTTPS origin. The
// origins are gone before the replay, so everything shown comes from the
// archive: once from the .warc.gz itself, once packed by `warcproxy wacz`.
func TestReplayWebPage(t *testing.T) {
	chromium := needChromium(t)
	certutil := needTool(t, "libnss3-tools", "certutil")
	rwp := needReplayWeb(t)

	site := startReplaySite(t)
	warc := site.record(t, chromium, certutil)
	site.close()

	for _, tc := range []struct {
		name    string
		archive func(t *testing.T) string
		// The point of a WACZ: its WARCs are stored, not deflated, in the
		// zip, so a replay tool reads just the index and the records it
		// needs, by range, however large the file.
		readsByRange bool
	}{
		{"warc.gz", func(*testing.T) string { return warc }, false},
		{"wacz", func(t *testing.T) string { return packWACZ(t, warc) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			archive := tc.archive(t)
			rep := rwp.replay(t, chromium, replayRun{
				archive: archive,
				url:     site.startURL(),
				target:  site.pageURL(),
				waitFor: site.scriptText,
				name:    tc.name,
			})
			site.checkReplay(t, rep)
			if tc.readsByRange {
				checkRangeReads(t, rep.Served, "/archive/"+filepath.Base(archive))
			}
		})
	}
}

// replaySite is the site recorded and replayed: /start redirects to /page,
// which links a stylesheet, a script that writes into the DOM, an image
// from its own origin and one from a second origin served over HTTPS only.
type replaySite struct {
	plain, tls *httptest.Server
	log        served // both origins: their paths are distinct

	title      string
	staticText string // in the HTML
	scriptText string // written by app.js, in no file the origin serves
	h1Color    string // what style.css makes the heading, as getComputedStyle says it
	files      map[string]siteFile
}

type siteFile struct {
	ctype string
	body  []byte
}

func startReplaySite(t *testing.T) *replaySite {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	s := &replaySite{
		title:      "warcproxy replay check",
		staticText: "This paragraph was recorded by warcproxy.",
		// app.js builds it from parts, so it is not in any file as such.
		scriptText: "Written by app.js, run " + token,
		h1Color:    "rgb(18, 52, 86)",
	}
	s.plain = httptest.NewServer(logged(&s.log, s))
	s.tls = httptest.NewUnstartedServer(logged(&s.log, s))
	// A tunnel Chromium opens ahead of need and closes unused shows as a
	// TLS handshake EOF: to the test log, not stderr.
	s.tls.Config.ErrorLog = stdlog.New(testLog{t}, "tls origin: ", 0)
	s.tls.StartTLS()
	t.Cleanup(s.close)
	s.files = map[string]siteFile{
		"/page": {"text/html; charset=utf-8", fmt.Appendf(nil, `<!doctype html>
<html><head><meta charset="utf-8"><title>%s</title>
<link rel="stylesheet" href="/style.css">
</head><body>
<h1>Replayed from the archive</h1>
<p id="static">%s</p>
<p id="dynamic">app.js has not run</p>
<img id="local" src="/img/local.png" alt="from the page's origin" width="48" height="48">
<img id="secure" src="%s/img/secure.png" alt="from the HTTPS origin" width="48" height="48">
<script src="/app.js"></script>
</body></html>
`, s.title, s.staticText, s.tls.URL)},
		"/style.css": {"text/css", []byte("body { font-family: sans-serif; margin: 2em; }\nh1 { color: #123456; }\n")},
		"/app.js": {"text/javascript", fmt.Appendf(nil,
			"document.getElementById(\"dynamic\").textContent = [\"Written by\", \"app.js, run\", %q].join(\" \");\n", token)},
		"/img/local.png":  {"image/png", pngOf(t, color.RGBA{R: 200, G: 60, B: 40, A: 255}, 48)},
		"/img/secure.png": {"image/png", pngOf(t, color.RGBA{R: 40, G: 120, B: 200, A: 255}, 48)},
	}
	return s
}

func (s *replaySite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/start" {
		http.Redirect(w, r, "/page", http.StatusFound)
		return
	}
	f, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.ctype)
	_, _ = w.Write(f.body)
}

func (s *replaySite) close() {
	s.plain.Close()
	s.tls.Close()
}

func (s *replaySite) startURL() string { return s.plain.URL + "/start" }
func (s *replaySite) pageURL() string  { return s.plain.URL + "/page" }

// record loads /start in headless Chromium through a proxy writing one
// WARC file, checks what Chromium showed and what the proxy wrote, and
// returns the file.
func (s *replaySite) record(t *testing.T, chromium, certutil string) string {
	t.Helper()
	p := proxytest.Start(t, func(c *config.Config) { c.WriterWorkers = 1 }) // one file to replay
	home := t.TempDir()
	trustCA(t, certutil, home, p.App.CACertFile())
	dom, stderr := dumpDOM(t, chromium, home, p.URL.String(), s.startURL())
	if !strings.Contains(dom, s.scriptText) {
		t.Fatalf("Chromium, recording, does not show the text app.js writes %q:\n%s\nchromium stderr:\n%s", s.scriptText, dom, stderr)
	}
	p.Stop()
	t.Logf("origins served %v", s.log.counts())

	recs := warccheck.Dir(t, p.Dir)
	status := make(map[string]string)
	for _, r := range recs {
		if r.Type == "response" {
			status[r.TargetURI], _, _ = strings.Cut(string(r.Block), "\r\n")
		}
	}
	for u, want := range map[string]string{
		s.startURL():                   "HTTP/1.1 302 Found",
		s.pageURL():                    "HTTP/1.1 200 OK",
		s.plain.URL + "/style.css":     "HTTP/1.1 200 OK",
		s.plain.URL + "/app.js":        "HTTP/1.1 200 OK",
		s.plain.URL + "/img/local.png": "HTTP/1.1 200 OK",
		s.tls.URL + "/img/secure.png":  "HTTP/1.1 200 OK",
	} {
		if status[u] != want {
			t.Errorf("%s: response record starts %q, want %q", u, status[u], want)
		}
	}
	warcs, err := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz"))
	if err != nil || len(warcs) != 1 {
		t.Fatalf("want one .warc.gz in %s, found %q (%v)", p.Dir, warcs, err)
	}
	return warcs[0]
}

// checkReplay checks what ReplayWeb.page showed of the site.
func (s *replaySite) checkReplay(t *testing.T, rep replayReport) {
	t.Helper()
	checkReplayShows(t, rep, replayShows{
		target: s.pageURL(),
		texts:  []string{s.staticText, s.scriptText},
		images: map[string]int{"/img/local.png": 48, "/img/secure.png": 48},
	})
	if rep.Title != s.title {
		t.Errorf("replayed title %q, want %q", rep.Title, s.title)
	}
	if rep.H1Color != s.h1Color {
		t.Errorf("replayed heading colour %q, want %q from style.css", rep.H1Color, s.h1Color)
	}
}

// replayShows is what a replayed page must show: the frame of target,
// each of texts in its body, and each image (by the end of its URL)
// loaded at its natural width.
type replayShows struct {
	target string
	texts  []string
	images map[string]int
}

// checkReplayShows checks rep against want, and that the replay asked for
// nothing off 127.0.0.1. Without the replayed frame it stops the test.
func checkReplayShows(t *testing.T, rep replayReport, want replayShows) {
	t.Helper()
	t.Logf("replayed in %d ms by ReplayWeb.page %s, puppeteer-core %s, %s", rep.ElapsedMs, rep.ReplayWebPage, rep.Puppeteer, rep.Chromium)
	if !rep.Found {
		var frames strings.Builder
		for _, f := range rep.Frames {
			fmt.Fprintf(&frames, "%s\n\t%s\n", f.URL, f.HTML)
		}
		t.Fatalf("no frame replays %s; frames:\n%s\nconsole errors:\n%s",
			want.target, frames.String(), strings.Join(rep.Console, "\n"))
	}
	for _, text := range want.texts {
		if !strings.Contains(rep.Text, text) {
			t.Errorf("the replayed page does not show %q; its text:\n%s", text, rep.Text)
		}
	}
	for name, width := range want.images {
		if !slices.ContainsFunc(rep.Images, func(img replayImage) bool {
			return strings.HasSuffix(img.Src, name) && img.Complete && img.NaturalWidth == width
		}) {
			t.Errorf("image %s did not load in the replay: %+v", name, rep.Images)
		}
	}
	if len(rep.OffHost) > 0 {
		t.Errorf("the replay asked for URLs off 127.0.0.1: %q", rep.OffHost)
	}
	for _, e := range rep.Console {
		if !ordinaryReplayError.MatchString(e) {
			t.Errorf("the replay logged an error: %s", e)
		}
	}
}

// ordinaryReplayError matches the console errors of every replay in
// ReplayWeb.page 2.5.3, whatever the archive: the app asks for its
// collection before it has loaded it (a 404 of .../w/api/c/ID?all=1), and
// the browser for the replayed site's /favicon.ico, which nobody archived.
var ordinaryReplayError = regexp.MustCompile(`^Failed to load resource: the server responded with a status of 404 .*\((\S+/w/api/c/[^/?]+\?all=1|\S+mp_/\S+/favicon\.ico)\)$`)

// boundedRange matches a Range header asking for a bounded piece of a
// file: bytes a to b, or the last n bytes.
var boundedRange = regexp.MustCompile(`^bytes=(\d+-\d+|-\d+)$`)

// checkRangeReads checks that the replay read path only in bounded pieces,
// never whole; served is replayReport.Served.
func checkRangeReads(t *testing.T, served []string, path string) {
	t.Helper()
	gets := 0
	for _, line := range served {
		f := strings.Fields(line) // method, path, status[, range]
		if len(f) < 3 || f[0] != http.MethodGet || f[1] != path {
			continue
		}
		gets++
		if len(f) != 4 || f[2] != "206" || !boundedRange.MatchString(f[3]) {
			t.Errorf("%s: %q is not a read of a bounded range", path, line)
		}
	}
	if gets < 2 {
		t.Errorf("%s was read %d times, want its index and records read by range: %q", path, gets, served)
	}
}
