//go:build linux

package e2e

import (
	"archive/zip"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/gobuild"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestReplayWebPageRevisitsOfImport: a site recorded once (the old
// crawl) is imported into a new index with `warcproxy dedup import`; a
// second crawl through a proxy on that index writes every resource as a
// revisit of the imported capture; the old and the new WARC packed side by
// side replay in ReplayWeb.page, which resolves the revisits to the old
// records: the page shows its text, script, stylesheet and images.
func TestReplayWebPageRevisitsOfImport(t *testing.T) {
	chromium := needChromium(t)
	certutil := needTool(t, "libnss3-tools", "certutil")
	rwp := needReplayWeb(t)
	bin, cleanup, err := gobuild.Binary("github.com/warcproxy/warcproxy/cmd/warcproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)

	site := startReplaySite(t)
	old := site.record(t, chromium, certutil)
	originals := map[string]string{}
	for _, r := range warccheck.Files(t, old) {
		if r.Type == "response" {
			originals[r.TargetURI] = r.ID
		}
	}

	index := "embedded:" + filepath.Join(t.TempDir(), "index.db")
	out, err := exec.Command(bin, "dedup", "import", "--dedup-db", index, old).CombinedOutput()
	if err != nil {
		t.Fatalf("warcproxy dedup import: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	// The second crawl, on the imported index.
	p := proxytest.Start(t, func(c *config.Config) { c.WriterWorkers = 1; c.DedupDB = index })
	home := t.TempDir()
	trustCA(t, certutil, home, p.App.CACertFile())
	if dom, stderr := dumpDOM(t, chromium, home, p.URL.String(), site.startURL()); !strings.Contains(dom, site.scriptText) {
		t.Fatalf("Chromium, recording again, does not show %q:\n%s\n%s", site.scriptText, dom, stderr)
	}
	p.Stop()
	site.close()
	revisits := map[string]bool{}
	for _, r := range warccheck.Dir(t, p.Dir) {
		switch r.Type {
		case "response":
			// Chromium asks for /favicon.ico (a 404) once it has a
			// profile; the first crawl may not have.
			if _, ok := originals[r.TargetURI]; ok {
				t.Errorf("%s archived in full the second time", r.TargetURI)
			}
		case "revisit":
			revisits[r.TargetURI] = true
			if want := originals[r.TargetURI]; r.Header["WARC-Refers-To"] != want {
				t.Errorf("%s: revisit refers to %q, want the imported %q", r.TargetURI, r.Header["WARC-Refers-To"], want)
			}
		}
	}
	// Every original is fetched again and becomes a revisit, but for
	// /favicon.ico, which Chromium asks for in one crawl and not always in
	// the next (a revisit when it does, checked above).
	for uri := range originals {
		if !revisits[uri] && !strings.HasSuffix(uri, "/favicon.ico") {
			t.Errorf("%s: no revisit in the second crawl (revisits of %d URLs, %d originals)", uri, len(revisits), len(originals))
		}
	}
	news, err := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz"))
	if err != nil || len(news) != 1 {
		t.Fatalf("want one new .warc.gz, found %q (%v)", news, err)
	}

	wacz := filepath.Join(t.TempDir(), "both.wacz")
	if out, err := exec.Command(bin, "wacz", "--output", wacz, old, news[0]).CombinedOutput(); err != nil {
		t.Fatalf("warcproxy wacz: %v\n%s", err, out)
	}
	rep := rwp.replay(t, chromium, replayRun{
		archive: wacz, url: site.startURL(), target: site.pageURL(), waitFor: site.scriptText, name: "revisits-of-import",
	})
	site.checkReplay(t, rep)
	// ReplayWeb.page takes the newest capture, the revisit, and reads the
	// original it names: both WARCs are read.
	oldRead, newRead := readsOf(t, wacz, rep.Served, filepath.Base(old)), readsOf(t, wacz, rep.Served, filepath.Base(news[0]))
	t.Logf("ranges read: %d in the old WARC, %d in the new", oldRead, newRead)
	if newRead == 0 || oldRead == 0 {
		t.Errorf("want records read from both WARCs (revisits from the new, originals from the old); old %d, new %d: %q",
			oldRead, newRead, rep.Served)
	}
}

// readsOf counts the range reads of the WACZ that fall within its member
// archive/name.
func readsOf(t *testing.T, wacz string, served []string, name string) int {
	t.Helper()
	z, err := zip.OpenReader(wacz)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var start, end int64 = -1, -1
	for _, f := range z.File {
		if f.Name == "archive/"+name {
			off, err := f.DataOffset()
			if err != nil {
				t.Fatal(err)
			}
			start, end = off, off+int64(f.CompressedSize64)
		}
	}
	if start < 0 {
		t.Fatalf("no archive/%s in %s", name, wacz)
	}
	n := 0
	for _, line := range served {
		f := strings.Fields(line)
		if len(f) != 4 || !strings.HasSuffix(f[1], filepath.Base(wacz)) {
			continue
		}
		a, b, ok := strings.Cut(strings.TrimPrefix(f[3], "bytes="), "-")
		from, err1 := strconv.ParseInt(a, 10, 64)
		to, err2 := strconv.ParseInt(b, 10, 64)
		if ok && err1 == nil && err2 == nil && from >= start && to < end {
			n++
		}
	}
	return n
}
