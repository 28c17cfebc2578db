// Package e2e holds the system tests: each starts the whole proxy
// (proxytest, the command's own wiring) against real origins on loopback,
// hand-written ones included, drives it as clients do, and checks what the
// clients got, what the origins saw, the WARCs (with both WARC readers,
// warccheck) and what /status and /metrics say. The proxy package's own
// tests cover the front end alone, with a fake capture sink.
//
// Some tests put real clients in the loop: a headless Chromium loading a
// page with its subresources and an XHR, wget crawling a small site and
// curl, then check the WARCs with warcio.js's CDX indexer too, as a replay
// tool would read them; one replays what Chromium recorded in ReplayWeb.page
// itself (replay_test.go). Chromium driven by puppeteer-core (crawl.mjs)
// crawls as jobs chosen by its proxy credentials or port, a service
// worker's fetch and a page's WebSocket included (browserjobs_test.go), and
// exchanges WebSocket messages with a ws origin (browserws_test.go), which
// ReplayWeb.page then replays around (replayws_test.go). Each needs its outside program (chromium and
// certutil, wget, curl, node, the npm packages under testdata/replayweb); a
// missing one skips the test, except under CI=true, where it fails: .ci/run
// installs them. So do the tests that
// need Redis (redistest: WARCPROXY_TEST_REDIS, or a redis-server to start).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// inCI reports whether a missing tool must fail the test.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// needTool returns the path of the first candidate that exists (an absolute
// path, or a name looked up in PATH), or skips the test (fails it under
// CI=true) naming the Debian package that provides it.
func needTool(t *testing.T, pkg string, candidates ...string) string {
	t.Helper()
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if filepath.IsAbs(c) {
			if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return c
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("none of %s found: install Debian package %s", strings.Join(slices.DeleteFunc(slices.Clone(candidates), func(s string) bool { return s == "" }), ", "), pkg)
	if inCI() {
		t.Fatalf("%s (.ci/run does)", msg)
	}
	t.Skip(msg)
	return ""
}

// served records the paths an origin answered, in order.
type served struct {
	mu    sync.Mutex
	paths []string
}

func (s *served) add(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, path)
}

// snapshot returns the request URIs served so far, in order.
func (s *served) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// counts returns how many times each request URI was served.
func (s *served) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.paths))
	for _, p := range s.paths {
		m[p]++
	}
	return m
}

// logged wraps h so that every request it answers is recorded in s.
func logged(s *served, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r.URL.RequestURI())
		h.ServeHTTP(w, r)
	})
}

// pngOf returns a small PNG of one colour: distinct colours give distinct
// payloads, so dedup never turns one image into a revisit of another.
func pngOf(t *testing.T, c color.RGBA, size int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// byURIAndType groups records by target URI and type.
func byURIAndType(recs []warccheck.Record) map[string]map[string][]warccheck.Record {
	out := make(map[string]map[string][]warccheck.Record)
	for _, r := range recs {
		if r.Type == "warcinfo" {
			continue
		}
		if out[r.TargetURI] == nil {
			out[r.TargetURI] = make(map[string][]warccheck.Record)
		}
		out[r.TargetURI][r.Type] = append(out[r.TargetURI][r.Type], r)
	}
	return out
}

// checkCaptures checks that each URL in want (URL → times the origin served
// it) has that many response records (revisits counted with them) and as
// many request records, each response named by a request record's
// WARC-Concurrent-To, and that no record is for a URL outside want: a
// browser or crawler request the origin did not serve (a leak to the
// network, or a capture of a failed fetch) shows here.
func checkCaptures(t *testing.T, recs []warccheck.Record, want map[string]int) {
	t.Helper()
	got := byURIAndType(recs)
	// The request record names its response in WARC-Concurrent-To.
	reqOf := make(map[string]warccheck.Record)
	for _, r := range recs {
		if r.Type == "request" {
			reqOf[r.Header["WARC-Concurrent-To"]] = r
		}
	}
	for u, n := range want {
		g := got[u]
		responses := append(slices.Clone(g["response"]), g["revisit"]...)
		if len(responses) != n {
			t.Errorf("%s: %d response/revisit records, the origin served it %d times", u, len(responses), n)
		}
		if len(g["request"]) != n {
			t.Errorf("%s: %d request records, the origin served it %d times", u, len(g["request"]), n)
		}
		for _, r := range responses {
			if req, ok := reqOf[r.ID]; !ok || req.TargetURI != u {
				t.Errorf("%s: no request record for this URL names %s record %s in WARC-Concurrent-To", u, r.Type, r.ID)
			}
			if !bytes.HasPrefix(r.Block, []byte("HTTP/1.1 200 ")) {
				t.Errorf("%s: %s record %s does not hold a 200 response: %.60q", u, r.Type, r.ID, r.Block)
			}
		}
	}
	var extra []string
	for u := range got {
		if _, ok := want[u]; !ok {
			extra = append(extra, u)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("records for URLs the origin did not serve: %q", extra)
	}
}

// cdxEntry and cdxFile mirror internal/testutil/warcio/cdx.mjs's output.
type cdxEntry struct {
	URL        string `json:"url"`
	URLKey     string `json:"urlkey"`
	Timestamp  string `json:"timestamp"`
	Status     string `json:"status"`
	Mime       string `json:"mime"`
	Digest     string `json:"digest"`
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length"`
	Method     string `json:"method"`
	HasRequest bool   `json:"hasRequest"`
	RequestURI string `json:"requestURI"`
}

type cdxFile struct {
	Path     string     `json:"path"`
	Entries  []cdxEntry `json:"entries"`
	Problems []string   `json:"problems"`
}

type cdxReport struct {
	Warcio string    `json:"warcio"`
	Node   string    `json:"node"`
	Files  []cdxFile `json:"files"`
}

// cdxIndex runs warcio.js's CDX indexer (cdx.mjs) over every WARC in dir
// and checks the index against the records: every response and revisit
// record is indexed once, at its own offset, with its URL and payload
// digest, paired with its request record; warcio.js reports no problem.
func cdxIndex(t *testing.T, dir string, recs []warccheck.Record) []cdxEntry {
	t.Helper()
	node := needTool(t, "nodejs", "node")
	script, err := filepath.Abs(filepath.Join("..", "testutil", "warcio", "cdx.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "warcio", "package.json")); err != nil {
		msg := "warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio`"
		if inCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no .warc.gz files in %s", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, paths...)...)
	cmd.Dir = filepath.Dir(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var exitErr *exec.ExitError
	if runErr != nil && (!errors.As(runErr, &exitErr) || exitErr.ExitCode() != 1) {
		t.Fatalf("running cdx.mjs: %v\nstderr:\n%s", runErr, stderr.String())
	}
	var rep cdxReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("reading cdx.mjs output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("warcio.js %s on node %s indexed %d files", rep.Warcio, rep.Node, len(rep.Files))

	type key struct {
		file string
		off  int64
	}
	indexed := make(map[key]cdxEntry)
	var all []cdxEntry
	for _, f := range rep.Files {
		for _, p := range f.Problems {
			t.Errorf("warcio.js cdx indexer: %s: %s", filepath.Base(f.Path), p)
		}
		for _, e := range f.Entries {
			k := key{filepath.Base(f.Path), e.Offset}
			if _, dup := indexed[k]; dup {
				t.Errorf("%s offset %d indexed twice", k.file, k.off)
			}
			indexed[k] = e
			all = append(all, e)
		}
	}
	responses := 0
	for _, r := range recs {
		if r.Type != "response" && r.Type != "revisit" {
			continue
		}
		responses++
		e, ok := indexed[key{r.File, r.Offset}]
		if !ok {
			t.Errorf("%s record %s (%s, %s offset %d) is not in the CDX index", r.Type, r.ID, r.TargetURI, r.File, r.Offset)
			continue
		}
		if e.URL != r.TargetURI {
			t.Errorf("CDX entry at %s offset %d: url %q, record %q", r.File, r.Offset, e.URL, r.TargetURI)
		}
		if d := r.Header["WARC-Payload-Digest"]; !strings.HasSuffix(d, ":"+e.Digest) {
			t.Errorf("CDX entry for %s: digest %q, record %q", e.URL, e.Digest, d)
		}
		if !e.HasRequest || e.RequestURI != r.TargetURI {
			t.Errorf("CDX entry for %s: the indexer did not pair it with its request record (got %q)", e.URL, e.RequestURI)
		}
		if e.Status == "" {
			t.Errorf("CDX entry for %s has no HTTP status", e.URL)
		}
	}
	if len(all) != responses {
		t.Errorf("CDX index has %d entries, the WARCs %d response/revisit records", len(all), responses)
	}
	return all
}
