package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// crawlSite is a small plain-HTTP site for a crawler: an index linking five
// pages, each linking two images of its own, the other pages and a page
// robots.txt forbids. Every body is distinct, so dedup writes no revisit.
func crawlSite(t *testing.T) (files map[string][]byte, ctypes map[string]string) {
	files = map[string][]byte{
		"/robots.txt":          []byte("User-agent: *\nDisallow: /private/\n"),
		"/private/secret.html": []byte("<html><body>robots.txt forbids this page</body></html>\n"),
	}
	ctypes = map[string]string{"/robots.txt": "text/plain; charset=utf-8"}
	var index strings.Builder
	index.WriteString("<!doctype html>\n<html><head><title>index</title></head><body>\n<ul>\n")
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&index, "<li><a href=\"/pages/p%d.html\">page %d</a></li>\n", i, i)
	}
	index.WriteString("</ul>\n</body></html>\n")
	files["/"] = []byte(index.String())
	for i := 1; i <= 5; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "<!doctype html>\n<html><head><title>page %d</title></head><body>\n<h1>page %d</h1>\n", i, i)
		for j, c := range []color.RGBA{{R: uint8(40 * i), A: 255}, {G: uint8(40 * i), A: 255}} {
			img := fmt.Sprintf("/img/p%d-%d.png", i, j)
			fmt.Fprintf(&b, "<img src=%q alt=\"image %d of page %d\">\n", img, j, i)
			files[img] = pngOf(t, c, 8+i)
		}
		for k := 1; k <= 5; k++ {
			if k != i {
				fmt.Fprintf(&b, "<a href=\"p%d.html\">page %d</a>\n", k, k)
			}
		}
		b.WriteString("<a href=\"/\">home</a>\n<a href=\"/private/secret.html\">secret</a>\n</body></html>\n")
		files[fmt.Sprintf("/pages/p%d.html", i)] = []byte(b.String())
	}
	return files, ctypes
}

// TestWget crawls a small site with wget --recursive through the proxy and
// checks that every URL the origin served is archived exactly once, as a
// response with its request record, and that the WARCs verify and index.
func TestWget(t *testing.T) {
	wget := needTool(t, "wget", os.Getenv("WARCPROXY_TEST_WGET"), "wget")

	files, ctypes := crawlSite(t)
	var log served
	origin := httptest.NewServer(logged(&log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if ct := ctypes[r.URL.Path]; ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		_, _ = w.Write(body)
	})))
	defer origin.Close()
	p := proxytest.Start(t, nil)

	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, wget,
		"--no-config", // no /etc/wgetrc or ~/.wgetrc: only the settings below
		"--recursive", "--level=3", "--no-parent",
		"-e", "robots=on",
		"-e", "use_proxy=on",
		"-e", "http_proxy="+p.URL.String(),
		"--no-verbose",
		"--tries=1", "--timeout=30",
		"--directory-prefix="+dir,
		"--delete-after",
		origin.URL+"/",
	)
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LANG=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("wget ran %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("wget: %v\n%s", err, out.String())
	}
	p.Stop()

	counts := log.counts()
	// The crawler fetched everything but what robots.txt forbids, once each.
	var want []string
	for path := range files {
		if !strings.HasPrefix(path, "/private/") {
			want = append(want, path)
		}
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(counts)); !slices.Equal(got, want) {
		t.Errorf("the origin served %q, want %q\nwget:\n%s", got, want, out.String())
	}
	wantRecs := make(map[string]int, len(counts))
	for path, n := range counts {
		if n != 1 {
			t.Errorf("the origin served %s %d times", path, n)
		}
		wantRecs[origin.URL+path] = n
	}

	recs := warccheck.Dir(t, p.Dir)
	checkCaptures(t, recs, wantRecs)
	for _, r := range recs {
		if r.Type == "revisit" {
			t.Errorf("revisit record for %s: every body is distinct", r.TargetURI)
		}
		if r.Type == "request" && !bytes.Contains(r.Block, []byte("User-Agent: Wget/")) {
			t.Errorf("request record for %s does not carry wget's User-Agent:\n%s", r.TargetURI, r.Block)
		}
	}
	cdxIndex(t, p.Dir, recs)
}
