package wacz_test

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/wacz"
)

// inCI reports whether a missing tool must fail the test.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// needTool returns the path of a command the checks run, or skips the
// test without it (fails it under CI=true: .ci/run installs it).
func needTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s not found: install Debian package %s", name, debianPackage)
		if inCI() {
			t.Fatalf("%s (.ci/run does)", msg)
		}
		t.Skip(msg)
	}
	return p
}

// run runs a command and returns its standard output; it must succeed.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s %v\nstderr:\n%s", name, args, stderr.String())
	return stdout.Bytes()
}

func gzipped(t *testing.T, p []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(p)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// deflated is p as Content-Encoding: deflate, in a zlib stream (wrap) or
// raw.
func deflated(t *testing.T, p []byte, wrap bool) []byte {
	var b bytes.Buffer
	var zw io.WriteCloser
	if wrap {
		zw = zlib.NewWriter(&b)
	} else {
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		require.NoError(t, err)
		zw = fw
	}
	_, err := zw.Write(p)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// site is an origin with pages of every kind pages.jsonl must tell apart.
func site(t *testing.T) *httptest.Server {
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, body)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/", html("<!doctype html><html><head><title>\n  Caf&eacute; &amp;\tBar  Page </title></head>"+
		`<body><img src="/img.png"><a href="/redirect">on</a></body></html>`))
	mux.HandleFunc("/img.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/", http.StatusFound)
	})
	mux.HandleFunc("/missing.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "<title>Not Found</title>")
	})
	gz := gzipped(t, []byte("<html><head><title>Gzipped</title></head><body>"+strings.Repeat("x", 5000)+"</body></html>"))
	mux.HandleFunc("/gzip.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz)
	})
	for path, wrap := range map[string]bool{"/zlib.html": true, "/rawdeflate.html": false} {
		page := []byte("<title>Deflated " + path + "</title>" + strings.Repeat("y", 3000))
		body := deflated(t, page, wrap)
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "deflate") // zlib as RFC 9110 says, or raw as some servers send
			_, _ = w.Write(body)
		})
	}
	mux.HandleFunc("/chunked.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xhtml+xml")
		for _, part := range []string{"<html><head><ti", "tle>Chunked ", "Page</title></head>", "<body/></html>"} {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush() // each write its own chunk
		}
	})
	mux.HandleFunc("/latin1.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		_, _ = w.Write([]byte("<title>Caf\xe9 cr\xe8me</title>"))
	})
	mux.HandleFunc("/brotli.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte{0x1b, 0x2a, 0x00, 0xf8, 0x25, 0x00, 0xa2, 0x40})
	})
	mux.Handle("/untitled.html", html("<html><body><svg><title>an icon</title></svg>no title</body></html>"))
	mux.Handle("/same.html", html("<title>Same</title>"+strings.Repeat("same body ", 100)))
	mux.Handle("/copy.html", html("<title>Same</title>"+strings.Repeat("same body ", 100)))
	// HTML pages fetched with other methods than GET (see sitePaths).
	mux.Handle("/head.html", html("<title>Head only</title>"))
	mux.Handle("/search.html", html("<title>Results</title>"))
	origin := httptest.NewServer(mux)
	t.Cleanup(origin.Close)
	return origin
}

// sitePaths are fetched in this order, with GET unless a method comes
// first; /same.html twice (the second time a revisit), then /copy.html,
// the same bytes at another URL (a revisit of /same.html).
var sitePaths = []string{"/", "/img.png", "/redirect", "/missing.html", "/gzip.html", "/zlib.html",
	"/rawdeflate.html", "/chunked.html", "/latin1.html", "/brotli.html", "/untitled.html", "/same.html", "/same.html", "/copy.html",
	"HEAD /head.html", "POST /search.html"}

// recordSite fetches sitePaths through a real proxy and returns the WARC
// files it wrote, checked by gowarc and warcio.js, and their records.
func recordSite(t *testing.T, origin string, gzipWARC bool) ([]string, []warccheck.Record) {
	p := proxytest.Start(t, func(c *config.Config) { c.Compression = codecOf(gzipWARC).Name() })
	client := p.Client()
	for _, path := range sitePaths {
		method, path, ok := strings.Cut(path, " ")
		if !ok {
			method, path = http.MethodGet, method
		}
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader("q=archive")
		}
		req, err := http.NewRequest(method, origin+path, body)
		require.NoError(t, err)
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Accept-Encoding", "gzip, br")
		resp, err := client.Do(req)
		require.NoError(t, err, path)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		p.Settle() // in order, so that the second /same.html is a revisit
	}
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	paths, err := filepath.Glob(filepath.Join(p.Dir, "*.warc*"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	return paths, recs
}

// zipEntries lists the package with Debian's zipinfo: path to compression
// method ("stor", "defN").
func zipEntries(t *testing.T, path string) map[string]string {
	out := run(t, needTool(t, "zipinfo", "unzip"), path)
	entries := map[string]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 9 && strings.HasPrefix(f[0], "-") {
			entries[f[8]] = f[5]
		}
	}
	return entries
}

// unpack tests the zip's CRCs and extracts it with Debian's unzip.
func unpack(t *testing.T, path string) string {
	unzip := needTool(t, "unzip", "unzip")
	require.Contains(t, string(run(t, unzip, "-t", path)), "No errors detected")
	dir := t.TempDir()
	run(t, unzip, "-q", path, "-d", dir)
	return dir
}

func sha256sum(t *testing.T, path string) string {
	out := run(t, needTool(t, "sha256sum", "coreutils"), path)
	return "sha256:" + strings.Fields(string(out))[0]
}

type datapackage struct {
	Profile     string `json:"profile"`
	WACZVersion string `json:"wacz_version"`
	Title       string `json:"title"`
	Created     string `json:"created"`
	Modified    string `json:"modified"`
	Software    string `json:"software"`
	Resources   []struct {
		Name  string `json:"name"`
		Path  string `json:"path"`
		Hash  string `json:"hash"`
		Bytes int64  `json:"bytes"`
	} `json:"resources"`
}

// checkPackage checks what any WACZ must hold, as a user would with unzip
// and sha256sum: every WARC stored, datapackage.json listing every other
// file with its true hash and size, datapackage-digest.json the hash of
// datapackage.json. It returns the extracted directory.
func checkPackage(t *testing.T, path string, warcs []string) (string, datapackage) {
	entries := zipEntries(t, path)
	dir := unpack(t, path)
	for _, w := range warcs {
		name := "archive/" + filepath.Base(w)
		require.Equal(t, "stor", entries[name], "%s must be stored, for range requests", name)
		require.Equal(t, sha256sum(t, w), sha256sum(t, filepath.Join(dir, name)), "%s is not the input byte for byte", name)
	}
	if m, ok := entries["indexes/index.cdx.gz"]; ok {
		require.Equal(t, "stor", m, "index.cdx.gz must be stored")
	}

	raw, err := os.ReadFile(filepath.Join(dir, "datapackage.json"))
	require.NoError(t, err)
	var dp datapackage
	require.NoError(t, json.Unmarshal(raw, &dp))
	require.Equal(t, "data-package", dp.Profile)
	require.Equal(t, "1.1.1", dp.WACZVersion)
	for _, ts := range []string{dp.Created, dp.Modified} {
		_, err := time.Parse(time.RFC3339, ts)
		require.NoError(t, err, "created/modified %q", ts)
	}
	listed := map[string]bool{}
	for _, r := range dp.Resources {
		require.Regexp(t, `^[-a-z0-9._/]+$`, r.Name, "a Frictionless resource name")
		require.Equal(t, sha256sum(t, filepath.Join(dir, r.Path)), r.Hash, r.Path)
		st, err := os.Stat(filepath.Join(dir, r.Path))
		require.NoError(t, err)
		require.Equal(t, st.Size(), r.Bytes, r.Path)
		listed[r.Path] = true
	}
	for name := range entries {
		if name != "datapackage.json" && name != "datapackage-digest.json" {
			require.True(t, listed[name], "%s is in the zip but not in datapackage.json", name)
		}
	}
	require.Len(t, listed, len(entries)-2, "datapackage.json lists a file the zip lacks")

	var digest struct{ Path, Hash string }
	raw, err = os.ReadFile(filepath.Join(dir, "datapackage-digest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &digest))
	require.Equal(t, "datapackage.json", digest.Path)
	require.Equal(t, sha256sum(t, filepath.Join(dir, "datapackage.json")), digest.Hash)
	return dir, dp
}

// cdxLine is an index line's JSON.
type cdxLine struct {
	urlkey, timestamp string
	URL               string `json:"url"`
	Status            string `json:"status"`
	Offset            string `json:"offset"`
	Length            string `json:"length"`
	Filename          string `json:"filename"`
}

func parseIndex(t *testing.T, data []byte) []cdxLine {
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	require.True(t, slices.IsSorted(lines), "index lines not in byte order")
	var out []cdxLine
	for _, l := range lines {
		key, js, ok := strings.Cut(strings.TrimSuffix(l, "\n"), " {")
		require.True(t, ok, l)
		var c cdxLine
		require.NoError(t, json.Unmarshal([]byte("{"+js), &c), l)
		c.urlkey, c.timestamp, _ = strings.Cut(key, " ")
		out = append(out, c)
	}
	return out
}

// checkRanges reads each index line's range from the extracted WARC, as a
// replay tool does, and finds there exactly one whole response or revisit
// record of the line's URL.
func checkRanges(t *testing.T, dir string, lines []cdxLine) {
	for _, c := range lines {
		off, err := strconv.ParseInt(c.Offset, 10, 64)
		require.NoError(t, err)
		n, err := strconv.ParseInt(c.Length, 10, 64)
		require.NoError(t, err)
		f, err := os.Open(filepath.Join(dir, "archive", c.Filename))
		require.NoError(t, err, "the index names %s", c.Filename)
		data := make([]byte, n)
		_, err = f.ReadAt(data, off)
		require.NoError(t, err)
		_ = f.Close()
		if strings.HasSuffix(c.Filename, ".gz") {
			src := bytes.NewReader(data)
			zr, err := gzip.NewReader(src)
			require.NoError(t, err, "%s at %d: not a gzip member", c.URL, off)
			zr.Multistream(false)
			data, err = io.ReadAll(zr)
			require.NoError(t, err)
			require.Zero(t, src.Len(), "%s at %d: the range holds more than one gzip member", c.URL, off)
		}
		head, block, ok := bytes.Cut(data, []byte("\r\n\r\n"))
		require.True(t, ok)
		fields := map[string]string{}
		for _, l := range strings.Split(string(head), "\r\n")[1:] {
			k, v, _ := strings.Cut(l, ":")
			fields[strings.ToLower(k)] = strings.TrimSpace(v)
		}
		require.Contains(t, []string{"response", "revisit"}, fields["warc-type"])
		require.Equal(t, c.URL, fields["warc-target-uri"])
		cl, err := strconv.Atoi(fields["content-length"])
		require.NoError(t, err)
		// A .warc.gz range ends after the record's CRLFCRLF; a .warc one,
		// as warcio.js and pywb count it, with the block.
		require.Contains(t, []int{cl, cl + 4}, len(block), "%s at %d: the range is not one record", c.URL, off)
	}
}

// warcioEntries indexes the WARCs with warcio.js (internal/testutil/warcio's
// cdx.mjs, which also checks that each range it gives holds its record)
// and returns "filename offset length url" for each entry.
func warcioEntries(t *testing.T, paths ...string) []string {
	node := needTool(t, "node", "nodejs")
	script, err := filepath.Abs(filepath.Join("..", "internal", "testutil", "warcio", "cdx.mjs"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "warcio")); err != nil {
		if inCI() {
			t.Fatalf("warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio` (.ci/run does)")
		}
		t.Skip("warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio`")
	}
	var report struct {
		Files []struct {
			Path    string `json:"path"`
			Entries []struct {
				URL    string `json:"url"`
				Offset int64  `json:"offset"`
				Length int64  `json:"length"`
			} `json:"entries"`
			Problems []string `json:"problems"`
		} `json:"files"`
	}
	cmd := exec.Command(node, append([]string{script}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output() // exit 1 with problems, which the report lists
	require.NoError(t, json.Unmarshal(out, &report), "cdx.mjs: %v\n%s", err, stderr.String())
	var entries []string
	for _, f := range report.Files {
		require.Empty(t, f.Problems, f.Path)
		for _, e := range f.Entries {
			entries = append(entries, fmt.Sprintf("%s %d %d %s", filepath.Base(f.Path), e.Offset, e.Length, e.URL))
		}
	}
	require.NoError(t, err, "cdx.mjs\n%s", stderr.String())
	slices.Sort(entries)
	return entries
}

func entriesOf(lines []cdxLine) []string {
	var out []string
	for _, c := range lines {
		out = append(out, fmt.Sprintf("%s %s %s %s", c.Filename, c.Offset, c.Length, c.URL))
	}
	slices.Sort(out)
	return out
}

// TestPack packs what the proxy recorded from a site, one .warc.gz and
// one .warc, and checks the WACZ with tools that are not ours: unzip and
// zipinfo, sha256sum, warcio.js.
func TestPack(t *testing.T) {
	origin := site(t)
	gzPaths, gzRecs := recordSite(t, origin.URL, true)
	plainPaths, plainRecs := recordSite(t, origin.URL, false)
	warcs := append(gzPaths, plainPaths...)

	out := filepath.Join(t.TempDir(), "site.wacz")
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	sum, err := wacz.Pack(context.Background(), warcs, wacz.Options{
		Output: out, Software: "warcproxy test", Now: func() time.Time { return created },
	})
	require.NoError(t, err)
	dir, dp := checkPackage(t, out, warcs)
	require.Equal(t, "site", dp.Title)
	require.Equal(t, "warcproxy test", dp.Software)
	require.Equal(t, "2025-01-02T03:04:05Z", dp.Created)
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, st.Size(), sum.Bytes)
	require.Equal(t, len(warcs), sum.WARCs)

	t.Run("index", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dir, "indexes", "index.cdxj"))
		require.NoError(t, err)
		lines := parseIndex(t, data)
		require.Len(t, lines, 2*len(sitePaths), "a line per capture")
		require.EqualValues(t, len(lines), sum.IndexLines)
		checkRanges(t, dir, lines)
		// cdx.mjs checks that records tile a file, which only holds in
		// .warc.gz files for warcio.js's lengths; the .warc files' ranges
		// are checked above.
		var extracted []string
		var gzLines []cdxLine
		for _, w := range gzPaths {
			extracted = append(extracted, filepath.Join(dir, "archive", filepath.Base(w)))
		}
		for _, l := range lines {
			if strings.HasSuffix(l.Filename, ".gz") {
				gzLines = append(gzLines, l)
			}
		}
		require.Equal(t, warcioEntries(t, extracted...), entriesOf(gzLines), "the index is warcio.js's")
	})

	t.Run("pages", func(t *testing.T) {
		f, err := os.Open(filepath.Join(dir, "pages", "pages.jsonl"))
		require.NoError(t, err)
		defer f.Close()
		sc := bufio.NewScanner(f)
		require.True(t, sc.Scan())
		var header map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &header))
		require.Equal(t, map[string]any{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}, header)

		dates := map[string]time.Time{} // of each response or revisit record, by "URL DATE"
		for _, r := range append(gzRecs, plainRecs...) {
			if r.Type == "response" || r.Type == "revisit" {
				dates[r.TargetURI+" "+r.Date.Format(time.RFC3339Nano)] = r.Date
			}
		}
		titles := map[string][]string{}
		ids := map[string]bool{}
		for sc.Scan() {
			var p map[string]string
			require.NoError(t, json.Unmarshal(sc.Bytes(), &p), sc.Text())
			ts, err := time.Parse(time.RFC3339, p["ts"])
			require.NoError(t, err, p["ts"])
			_, ok := dates[p["url"]+" "+ts.Format(time.RFC3339Nano)]
			require.True(t, ok, "page %s at %s: no response or revisit record at that time", p["url"], p["ts"])
			require.NotEmpty(t, p["id"])
			require.False(t, ids[p["id"]], "id %s twice", p["id"])
			ids[p["id"]] = true
			title, hasTitle := p["title"]
			if !hasTitle {
				title = "(none)"
			}
			require.NotEmpty(t, title, "an empty title is left out")
			path := strings.TrimPrefix(p["url"], origin.URL)
			titles[path] = append(titles[path], title)
		}
		require.NoError(t, sc.Err())
		twice := func(s string) []string { return []string{s, s} } // one page per WARC
		require.Equal(t, map[string][]string{
			"/":                twice("Café & Bar Page"),
			"/gzip.html":       twice("Gzipped"),
			"/zlib.html":       twice("Deflated /zlib.html"),
			"/rawdeflate.html": twice("Deflated /rawdeflate.html"),
			"/chunked.html":    twice("Chunked Page"),
			"/latin1.html":     twice("Café crème"),
			"/brotli.html":     twice("(none)"),
			"/untitled.html":   twice("(none)"),
			"/same.html":       twice("Same"), // and not its revisit
			// a revisit at another URL is a page, with no body for a title
			"/copy.html": twice("(none)"),
			// and not /head.html or /search.html: replay tools look a page
			// up by GET, and their index keys a HEAD or POST apart
		}, titles)
		require.EqualValues(t, 20, sum.Pages)
	})
}

// TestPackPagesNone: --pages-from none writes the header line only.
func TestPackPagesNone(t *testing.T) {
	warcs, _ := recordSite(t, site(t).URL, true)
	out := filepath.Join(t.TempDir(), "none.wacz")
	sum, err := wacz.Pack(context.Background(), warcs, wacz.Options{Output: out, Pages: wacz.PagesNone, Title: "No pages"})
	require.NoError(t, err)
	require.Zero(t, sum.Pages)
	dir, dp := checkPackage(t, out, warcs)
	require.Equal(t, "No pages", dp.Title)
	data, err := os.ReadFile(filepath.Join(dir, "pages", "pages.jsonl"))
	require.NoError(t, err)
	require.Equal(t, `{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}`+"\n", string(data))
}

// TestPackPagesWithoutRequests: WARCs from other tools may hold response
// records without their request records; each HTML 200 among them is a
// page (nothing says it was not fetched with a GET), also when responses
// follow each other.
func TestPackPagesWithoutRequests(t *testing.T) {
	var warc strings.Builder
	for i, title := range []string{"One", "Two", "Three"} {
		body := "<title>" + title + "</title>"
		block := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		fmt.Fprintf(&warc, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-00000000000%d>\r\n"+
			"WARC-Date: 2025-01-02T03:04:0%dZ\r\nWARC-Target-URI: http://example.com/%d\r\n"+
			"Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", i, i, i, len(block), block)
	}
	in := filepath.Join(t.TempDir(), "responses.warc")
	require.NoError(t, os.WriteFile(in, []byte(warc.String()), 0o644))
	out := filepath.Join(t.TempDir(), "responses.wacz")
	sum, err := wacz.Pack(context.Background(), []string{in}, wacz.Options{Output: out})
	require.NoError(t, err)
	dir, _ := checkPackage(t, out, []string{in})
	data, err := os.ReadFile(filepath.Join(dir, "pages", "pages.jsonl"))
	require.NoError(t, err)
	var titles []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		var p map[string]string
		require.NoError(t, json.Unmarshal([]byte(l), &p), l)
		titles = append(titles, p["title"])
	}
	require.Equal(t, []string{"One", "Two", "Three"}, titles)
	require.EqualValues(t, 3, sum.Pages)
}

// TestPackDamagedInput: an input whose last record is cut short (a cut
// anywhere else may fall between two records) fails the packing, names the
// file, and leaves nothing in the output directory.
func TestPackDamagedInput(t *testing.T) {
	warcs, _ := recordSite(t, site(t).URL, true)
	data, err := os.ReadFile(warcs[0])
	require.NoError(t, err)
	damaged := filepath.Join(t.TempDir(), "damaged.warc.gz")
	require.NoError(t, os.WriteFile(damaged, data[:len(data)-10], 0o644))

	outDir := t.TempDir()
	_, err = wacz.Pack(context.Background(), append(warcs, damaged), wacz.Options{Output: filepath.Join(outDir, "x.wacz")})
	require.ErrorContains(t, err, damaged)
	require.ErrorContains(t, err, "not a whole warc record")
	left, err := os.ReadDir(outDir)
	require.NoError(t, err)
	require.Empty(t, left, "a failed packing leaves files behind")
}

// TestPackCanceled: a run stopped by its context (Ctrl-C in the command)
// leaves nothing in the output directory.
func TestPackCanceled(t *testing.T) {
	warcs, _ := recordSite(t, site(t).URL, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	outDir := t.TempDir()
	_, err := wacz.Pack(ctx, warcs, wacz.Options{Output: filepath.Join(outDir, "x.wacz")})
	require.ErrorIs(t, err, context.Canceled)
	left, err := os.ReadDir(outDir)
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestPackRelativeOutput: a bare output name packs in the working
// directory, its temporary files beside it.
func TestPackRelativeOutput(t *testing.T) {
	warcs, _ := recordSite(t, site(t).URL, true)
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := wacz.Pack(context.Background(), warcs, wacz.Options{Output: "rel.wacz"})
	require.NoError(t, err)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, "rel.wacz", left[0].Name())
}
