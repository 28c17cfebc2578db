package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// original is what a revisit of an imported capture must point at.
type original struct{ id, date string }

// archive is an earlier crawl of the origin's payloads, as files to
// import, each with the originals a new crawl's revisits must name (by
// URL).
type archive struct {
	origin *httptest.Server
	paths  []string // every payload's path on the origin
	inputs map[string]archiveInput
}

type archiveInput struct {
	files     []string
	originals map[string]original
}

// payloads the origin serves: an HTML page, an image, and the body of the
// warcio.js capture. Content-Length is set, so none is chunked.
func newOrigin(t *testing.T) (*httptest.Server, map[string][]byte) {
	bodies := map[string][]byte{
		"/page.html":  []byte("<!doctype html><title>Old page</title>" + strings.Repeat("<p>text</p>", 100)),
		"/img.bin":    bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}, 300),
		"/warcio.bin": bytes.Repeat([]byte("written by warcio.js "), 50),
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		_, _ = w.Write(b)
	}))
	t.Cleanup(origin.Close)
	return origin, bodies
}

// crawl fetches paths through p and stops it.
func crawl(t *testing.T, p *proxytest.Proxy, origin string, paths ...string) {
	t.Helper()
	c := p.Client()
	for _, path := range paths {
		resp, err := c.Get(origin + path)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	p.Stop()
}

// newArchive records the origin's page and image with the proxy (a
// .warc.gz with its --cdxj index, packed into a WACZ by warcproxy wacz,
// and a .warc.zst), and its third payload with warcio.js (SHA-256 digests,
// which the import recomputes as SHA-1).
func newArchive(t *testing.T) *archive {
	origin, bodies := newOrigin(t)
	a := &archive{origin: origin, paths: []string{"/page.html", "/img.bin"}, inputs: map[string]archiveInput{}}
	for _, compression := range []string{"gzip", "zstd"} {
		p := proxytest.Start(t, func(c *config.Config) { c.Compression = compression; c.CDXJ = true })
		crawl(t, p, origin.URL, a.paths...)
		originals := map[string]original{}
		for _, r := range warccheck.Dir(t, p.Dir) {
			if r.Type == "response" {
				originals[r.TargetURI] = original{r.ID, r.Header["WARC-Date"]}
			}
		}
		require.Len(t, originals, 2)
		warcs, err := filepath.Glob(filepath.Join(p.Dir, "*.warc*"))
		require.NoError(t, err)
		require.NotEmpty(t, warcs)
		a.inputs[compression] = archiveInput{warcs, originals}
		if compression != "gzip" {
			continue
		}
		cdxjs, err := filepath.Glob(filepath.Join(p.Dir, "*.cdxj"))
		require.NoError(t, err)
		require.Len(t, cdxjs, len(warcs), "--cdxj writes an index beside each WARC")
		// A CDXJ line has no record ID, and its timestamp has seconds.
		byLine := map[string]original{}
		for u, o := range originals {
			byLine[u] = original{"", o.date[:19] + "Z"}
		}
		a.inputs["cdxj"] = archiveInput{cdxjs, byLine}
		wacz := filepath.Join(t.TempDir(), "old.wacz")
		code, out := runMain(t, append([]string{"wacz", "-o", wacz}, warcs...)...)
		require.Equal(t, 0, code, out)
		a.inputs["wacz"] = archiveInput{[]string{wacz}, originals}
	}
	a.inputs["warcio.js"] = warcioArchive(t, origin.URL+"/warcio.bin", bodies["/warcio.bin"])
	return a
}

// warcioArchive writes a WARC with warcio.js (internal/testutil/warcio's
// write.mjs): a response with a SHA-256 payload digest and a revisit of
// it.
func warcioArchive(t *testing.T, url string, body []byte) archiveInput {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "internal", "testutil", "warcio", "write.mjs"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "warcio")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio` (.ci/run does)")
		}
		t.Skip("warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio`")
	}
	dir := t.TempDir()
	bodyFile := filepath.Join(dir, "body")
	require.NoError(t, os.WriteFile(bodyFile, body, 0o644))
	out := filepath.Join(dir, "warcio.warc.gz")
	var stderr bytes.Buffer
	cmd := exec.Command(node, script, out, url, bodyFile, "sha-256")
	cmd.Stderr = &stderr
	js, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var w struct{ ID, Date, Digest string }
	require.NoError(t, json.Unmarshal(js, &w))
	require.True(t, strings.HasPrefix(w.Digest, "sha256:"), w.Digest)
	return archiveInput{[]string{out}, map[string]original{url: {w.ID, w.Date}}}
}

var importSummary = regexp.MustCompile(`, (\d+) records? read, (\d+) added, (\d+) already there`)

// runImport runs warcproxy dedup import and returns the added and
// already-there counts of its summary.
func runImport(t *testing.T, args ...string) (added, present string) {
	t.Helper()
	code, out := runMain(t, append([]string{"dedup", "import"}, args...)...)
	require.Equal(t, 0, code, out)
	m := importSummary.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	return m[2], m[3]
}

// TestDedupImportSeedsRevisits imports an earlier crawl (each kind of
// input, into each backend), twice, then crawls the same payloads through
// a proxy on that index: every capture is a revisit of the imported
// original, naming its record ID (none from a CDXJ line), URL and date.
func TestDedupImportSeedsRevisits(t *testing.T) {
	a := newArchive(t)
	backends := map[string]func(t *testing.T) string{
		"embedded": func(t *testing.T) string { return "embedded:" + filepath.Join(t.TempDir(), "index.db") },
		"redis":    func(t *testing.T) string { return redistest.URL(t) },
	}
	for _, backend := range []string{"embedded", "redis"} {
		for _, kind := range []string{"gzip", "zstd", "wacz", "cdxj", "warcio.js"} {
			in := a.inputs[kind]
			t.Run(backend+"/"+kind, func(t *testing.T) {
				spec := backends[backend](t)
				added, present := runImport(t, append([]string{"--dedup-db", spec}, in.files...)...)
				require.Equal(t, fmt.Sprint(len(in.originals)), added)
				require.Equal(t, "0", present)
				added, present = runImport(t, slices.Concat(in.files, []string{"--dedup-db", spec})...)
				require.Equal(t, "0", added, "a second import adds nothing")
				require.Equal(t, fmt.Sprint(len(in.originals)), present)

				p := proxytest.Start(t, func(c *config.Config) { c.DedupDB = spec })
				var urls []string
				for u := range in.originals {
					urls = append(urls, strings.TrimPrefix(u, a.origin.URL))
				}
				crawl(t, p, a.origin.URL, urls...)
				revisits := 0
				for _, r := range warccheck.Dir(t, p.Dir) {
					switch r.Type {
					case "response":
						t.Errorf("%s archived in full: not deduplicated against the import", r.TargetURI)
					case "revisit":
						revisits++
						o, ok := in.originals[r.TargetURI]
						require.True(t, ok, r.TargetURI)
						id, hasID := r.Header["WARC-Refers-To"]
						require.Equal(t, o.id != "", hasID, "WARC-Refers-To only with a record ID")
						require.Equal(t, o.id, id)
						require.Equal(t, r.TargetURI, r.Header["WARC-Refers-To-Target-URI"])
						require.Equal(t, o.date, r.Header["WARC-Refers-To-Date"])
					}
				}
				require.Equal(t, len(in.originals), revisits)
			})
		}
	}
}

// TestDedupImportRefuses: bad flags and inputs exit 2 before the index is
// created or touched; an embedded index a running proxy holds is refused
// with that reason; a WARC that breaks off part way exits 1, keeping what
// was read before the break (a second run, once it is mended, adds the
// rest).
func TestDedupImportRefuses(t *testing.T) {
	good := testWARC(t)
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	in := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(in, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	db := filepath.Join(t.TempDir(), "index.db")
	spec := "embedded:" + db
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no index", []string{good}, "--dedup-db SPEC is required"},
		{"index none", []string{"--dedup-db", "none", good}, "no index to import into"},
		{"bad index", []string{"--dedup-db", "mysql://x", good}, "--dedup-db"},
		{"no files", []string{"--dedup-db", spec}, "no files given"},
		{"unknown flag", []string{"--dedup-db", spec, "--buckt", "x", good}, "did you mean --bucket?"},
		{"digest algorithm", []string{"--dedup-db", spec, "-g", "md5", good}, `unsupported digest algorithm "md5"`},
		{"missing file", []string{"--dedup-db", spec, filepath.Join(in, "gone.warc.gz")}, "no such file"},
		{"still open", []string{"--dedup-db", spec, write("crawl.warc.gz.open", data)}, "still being written"},
		{"directory", []string{"--dedup-db", spec, in}, "a directory; name its files"},
		{"other name", []string{"--dedup-db", spec, write("crawl.txt", data)}, "want .warc, .warc.gz, .warc.zst, .wacz or .cdxj"},
		{"not a WARC", []string{"--dedup-db", spec, write("notes.warc", []byte("just notes\n"))}, "not a WARC file"},
		{"not a WACZ", []string{"--dedup-db", spec, write("x.wacz", data)}, "not a WACZ file"},
		{"not a CDXJ", []string{"--dedup-db", spec, write("x.cdxj", []byte("hello world\n"))}, "not a CDXJ file"},
		{"one bad among good", []string{"--dedup-db", spec, good, write("empty.warc", nil)}, "empty"},
	}
	t.Run("subcommand", func(t *testing.T) {
		code, out := runMain(t, "dedup", "improt", good)
		require.Equal(t, 2, code, out)
		require.Contains(t, out, `unknown subcommand "improt" (did you mean import?)`)
		code, out = runMain(t, "dedup")
		require.Equal(t, 2, code, out)
		require.Contains(t, out, "name a subcommand: import")
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runMain(t, append([]string{"dedup", "import"}, tc.args...)...)
			require.Equal(t, 2, code, out)
			require.Contains(t, out, tc.want)
			require.NoFileExists(t, db, "nothing is written")
		})
	}

	t.Run("index in use", func(t *testing.T) {
		held := filepath.Join(t.TempDir(), "held.db")
		proxytest.Start(t, func(c *config.Config) { c.DedupDB = "embedded:" + held; c.StatsDB = c.DedupDB })
		code, out := runMain(t, "dedup", "import", "--dedup-db", "embedded:"+held, good)
		require.Equal(t, 2, code, out)
		require.Contains(t, out, "in use by another process (a running warcproxy?)")
	})

	t.Run("broken part way", func(t *testing.T) {
		// Two captures, the second cut short: the first is imported.
		origin, _ := newOrigin(t)
		p := proxytest.Start(t, func(c *config.Config) { c.WriterWorkers = 1 })
		crawl(t, p, origin.URL, "/page.html", "/img.bin")
		var second int64
		for _, r := range warccheck.Dir(t, p.Dir) {
			if r.Type == "response" && strings.HasSuffix(r.TargetURI, "/img.bin") {
				second = r.Offset
			}
		}
		require.NotZero(t, second)
		warcs, err := filepath.Glob(filepath.Join(p.Dir, "*.warc.gz"))
		require.NoError(t, err)
		require.Len(t, warcs, 1)
		whole, err := os.ReadFile(warcs[0])
		require.NoError(t, err)
		cut := write("cut.warc.gz", whole[:second+40])
		code, out := runMain(t, "dedup", "import", "--dedup-db", spec, cut)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "cut.warc.gz")
		require.Regexp(t, `\b1 added`, out, "what came before the break stays")
		added, present := runImport(t, "--dedup-db", spec, warcs[0])
		require.Equal(t, "1", added)
		require.Equal(t, "1", present)
	})
}
