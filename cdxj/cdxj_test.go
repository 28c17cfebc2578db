package cdxj_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/cdxj"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// inCI reports whether a missing tool must fail the test.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// warcioDir is where warcio.js is installed for the tests.
func warcioDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "internal", "testutil", "warcio"))
	require.NoError(t, err)
	return dir
}

// needNode returns the node binary, or skips the test (fails it under
// CI=true) when node or warcio.js is missing.
func needNode(t testing.TB) string {
	t.Helper()
	skip := func(msg string) {
		if inCI() {
			t.Fatalf("%s (.ci/run does)", msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node not found: install Debian package nodejs")
	}
	if _, err := os.Stat(filepath.Join(warcioDir(t), "node_modules", "warcio", "package.json")); err != nil {
		skip("warcio.js is not installed: run `npm ci --prefix internal/testutil/warcio`")
	}
	return node
}

// runNode runs node with args in the warcio.js directory and returns its
// standard output.
func runNode(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	node := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = warcioDir(t)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node %v\nstderr:\n%s", args, stderr.String())
	require.Empty(t, stderr.String(), "node %v wrote to stderr", args)
	return stdout.Bytes()
}

// warcioIndex is `warcio cdx-index path`, sorted.
func warcioIndex(t testing.TB, path string) []string {
	t.Helper()
	out := runNode(t, nil, filepath.Join("node_modules", "warcio", "dist", "cli.js"), "cdx-index", path)
	return sortedLines(string(out))
}

func sortedLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	slices.Sort(lines)
	return lines
}

// requireSameIndex checks WriteBeside's index of path against warcio.js's
// and returns our lines.
func requireSameIndex(t *testing.T, path string) []string {
	t.Helper()
	want := warcioIndex(t, path)
	dst, err := cdxj.WriteBeside(path)
	require.NoError(t, err)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(got), "\n"), "\n")
	require.True(t, slices.IsSorted(lines), "index not sorted")
	require.Equal(t, want, sortedLines(string(got)), "index of %s", filepath.Base(path))
	return want
}

func warcFiles(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for _, pat := range []string{"*.warc", "*.warc.gz", "*.warc.zst"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	require.NotEmpty(t, paths, "no WARC files in %s", dir)
	return paths
}

// TestProxyCapturesMatchWarcio runs the proxy against an origin serving
// varied URLs and checks the index of every WARC it wrote against warcio.js.
func TestProxyCapturesMatchWarcio(t *testing.T) {
	needNode(t)
	var gzBody bytes.Buffer
	zw := gzip.NewWriter(&gzBody)
	_, _ = zw.Write(bytes.Repeat([]byte("compressed text "), 500))
	require.NoError(t, zw.Close())
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		fmt.Fprintf(w, "<p>%s %s</p>", r.Method, r.URL.RequestURI())
	})
	mux.HandleFunc("/same/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(bytes.Repeat([]byte("same payload "), 100))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target?x=1", http.StatusFound)
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gzBody.Bytes())
	})
	mux.HandleFunc("/noctype", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		_, _ = w.Write([]byte{0, 1, 2, 3})
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(bytes.Repeat([]byte("0123456789abcdef"), 300<<10>>4))
	})
	origin := httptest.NewServer(mux)
	t.Cleanup(origin.Close)

	type req struct{ method, path, ctype, body string }
	reqs := []req{
		{"GET", "/", "", ""},
		{"GET", "/a/b/c.html?b=2&a=1&C=3", "", ""},
		{"GET", "/UPPER/Case.HTML?Q=Value", "", ""},
		{"GET", "/pct/%7Euser/a%20b/%C3%A9?q=%41%2f&r=caf%C3%A9", "", ""},
		{"GET", "/dots/./x/../y", "", ""},
		{"GET", "/empty-query?", "", ""},
		{"GET", "/redirect", "", ""},
		{"GET", "/missing", "", ""},
		{"GET", "/gzip", "", ""},
		{"GET", "/noctype", "", ""},
		{"GET", "/big", "", ""},
		{"HEAD", "/head", "", ""},
		{"GET", "/same/1", "", ""},
		{"GET", "/same/2", "", ""}, // a revisit of /same/1
		{"GET", "/same/1", "", ""}, // a revisit of itself
		{"POST", "/form", "application/x-www-form-urlencoded", "name=J%C3%BCrgen+X&b=2&a=%2F"},
		{"POST", "/json?z=1", "application/json", `{"b":1,"a":[true,"x y",null,1.50],"2":{"c":"d","a":"again"},"1":0}`},
		{"POST", "/text", "text/plain", "not json"},
		{"POST", "/binary", "application/octet-stream", "\x00\x01binary\xff"},
		{"PUT", "/multipart", "multipart/form-data; boundary=XyZ", "--XyZ\r\nContent-Disposition: form-data; name=\"f1\"\r\n\r\nvalue one\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f2\"\r\n\r\nv2\r\n--XyZ--\r\n"},
		{"POST", "/bad-escape", "application/x-www-form-urlencoded", "a=%E0%A4%A"},
		{"DELETE", "/thing/1", "", ""},
	}

	for _, compression := range []string{"gzip", "none", "zstd", "zstd with a dictionary"} {
		t.Run("compression="+compression, func(t *testing.T) {
			var dict []byte
			p := proxytest.Start(t, func(c *config.Config) {
				c.Compression, _, _ = strings.Cut(compression, " ")
				if strings.HasSuffix(compression, "dictionary") {
					dict = trainDict(t)
					c.ZstdDictionary = filepath.Join(t.TempDir(), "warc.dict")
					require.NoError(t, os.WriteFile(c.ZstdDictionary, dict, 0o644))
				}
			})
			client := p.Client()
			for _, r := range reqs {
				var body io.Reader
				if r.body != "" {
					body = strings.NewReader(r.body)
				}
				hr, err := http.NewRequest(r.method, origin.URL+r.path, body)
				require.NoError(t, err)
				if r.ctype != "" {
					hr.Header.Set("Content-Type", r.ctype)
				}
				resp, err := client.Do(hr)
				require.NoError(t, err, r.path)
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				p.Settle() // one capture at a time, so that revisits are revisits
			}
			p.Stop()
			n := 0
			for _, path := range warcFiles(t, p.Dir) {
				var lines []string
				if strings.HasSuffix(path, ".zst") {
					lines = requireSameIndexZstd(t, path, dict)
				} else {
					lines = requireSameIndex(t, path)
				}
				n += len(lines)
				for _, l := range lines {
					t.Log(strings.TrimSpace(l))
				}
			}
			require.Equal(t, len(reqs), n, "one index line per capture")
		})
	}
}

// TestWriterRecordsMatchWarcio writes records the proxy would not (other
// hosts, resource and metadata records, odd heads) with the real writer
// and checks their index against warcio.js.
func TestWriterRecordsMatchWarcio(t *testing.T) {
	needNode(t)
	date := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	resp := func(uri, head string) []writer.Record {
		block := []byte(head + "\r\n\r\nbody of " + uri)
		return []writer.Record{{
			Type: "response", TargetURI: uri, Date: date,
			ContentType: "application/http; msgtype=response",
			Fields:      []writer.Field{{Name: "WARC-Payload-Digest", Value: "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}},
			Block:       bytes.NewReader(block), BlockLength: int64(len(block)),
		}, {
			Type: "request", TargetURI: uri, Date: date,
			ContentType: "application/http; msgtype=request",
			Block:       strings.NewReader("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), BlockLength: int64(len("GET / HTTP/1.1\r\nHost: x\r\n\r\n")),
		}}
	}
	const okHead = "HTTP/1.1 200 OK\r\nContent-Type: text/html"
	var caps [][]writer.Record
	for _, uri := range []string{
		"http://[::1]:8080/v6?b&a",
		"https://[2001:DB8::1]/x",
		"http://Example.COM./trailing/dot",
		"http://www.example.com/www",
		"http://www2.example.com/www2",
		"http://WWW.example.com/upper-www",
		"HTTP://EXAMPLE.COM/upper-scheme",
		"https://example.com:443/default-port",
		"http://example.com:80/default-port",
		"https://example.com:8443/other-port#frag",
		"http://bücher.example/idn?ü=1",
		"http://example.com/a b/<q>?x=\"y\"&'=1",
		"http://0x7f.1/hex-ipv4",
		"http://user:pw@example.com/userinfo",
		"dns:example.com",
		"urn:x-test:1",
		"http://[bad/unparsable",
	} {
		caps = append(caps, resp(uri, okHead))
	}
	caps = append(caps,
		resp("http://example.com/status-text", "HTTP/1.1 404 Not Found\r\nContent-Type: text/html; charset=utf-8"),
		resp("http://example.com/no-reason", "HTTP/1.0 204"),
		resp("http://example.com/weird-status", "HTTP/1.1 0x1F weird\r\nContent-Type:  Text/Plain ;q=1"),
		resp("http://example.com/nan-status", "HTTP/1.1 abc\r\ncontent-type: ;charset=x"),
		resp("http://example.com/two-ctypes", "HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Type: c/d"),
		resp("http://example.com/folded", "HTTP/1.1 200 OK\r\nContent-Type: text/\r\n html"),
		[]writer.Record{{
			Type: "revisit", TargetURI: "http://example.com/revisit-no-head", Date: date,
			ContentType: "application/http; msgtype=response",
			Fields: []writer.Field{
				{Name: "WARC-Profile", Value: "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"},
				{Name: "WARC-Payload-Digest", Value: "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"},
			},
			Block: strings.NewReader(""),
		}},
		[]writer.Record{{
			Type: "resource", TargetURI: "urn:test:resource", Date: date,
			ContentType: "text/plain; charset=utf-8",
			Block:       strings.NewReader("resource body"), BlockLength: 13,
		}},
		[]writer.Record{{
			Type: "metadata", TargetURI: "http://example.com/meta", Date: date,
			ContentType: "application/warc-fields",
			Block:       strings.NewReader("via: x\r\n"), BlockLength: 8,
		}},
		[]writer.Record{{
			Type: "metadata", TargetURI: "http://example.com/meta-json", Date: date,
			ContentType: "application/json",
			Block:       strings.NewReader(`{"a":"<&>\u2028"}`), BlockLength: int64(len(`{"a":"<&>\u2028"}`)),
		}},
		[]writer.Record{{
			Type: "resource", TargetURI: "http://example.com/\"quoted\"\\tab\t<x>\u2028é", Date: date,
			Block: strings.NewReader("x"), BlockLength: 1,
		}},
	)
	for _, c := range []warcscan.Codec{warcscan.Gzip, warcscan.None, warcscan.Zstd} {
		t.Run("compression="+c.Name(), func(t *testing.T) {
			dir := t.TempDir()
			p, err := writer.New(writer.Options{Dir: dir, Compression: c, Hostname: "test", Workers: 1},
				slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			for _, recs := range caps {
				require.NoError(t, p.Enqueue(context.Background(), &writer.Capture{Records: recs}))
			}
			require.NoError(t, p.Close(context.Background()))
			paths := warcFiles(t, dir)
			require.Len(t, paths, 1)
			var lines []string
			if c == warcscan.Zstd {
				lines = requireSameIndexZstd(t, paths[0], nil)
			} else {
				lines = requireSameIndex(t, paths[0])
			}
			require.Len(t, lines, len(caps)-1, "every capture but the warc-fields metadata")
			for _, l := range lines {
				t.Log(strings.TrimSpace(l))
			}
		})
	}
}

// TestSURT checks fixed urlkeys, then SURT against warcio.js's getSurt for
// many more URLs.
func TestSURT(t *testing.T) {
	fixed := map[string]string{
		"http://127.0.0.1:18080/bytes/16kb":     "1,0,0,127:18080)/bytes/16kb",
		"https://www.Example.com/A?b=1&a=2#f":   "com,example)/a?a=2&b=1",
		"http://example.com":                    "com,example)/",
		"http://example.com:80/":                "com,example)/",
		"http://[::1]:8080/x":                   "[::1]:8080)/x",
		"http://example.com./":                  ",com,example)/",
		"ftp://example.com/":                    "ftp://example.com/",
		"http://example.com/?":                  "com,example)/",
		"http://www3.example.com/a%20b?c%3Dd=e": "com,example)/a%20b?c%3dd=e",
	}
	for in, want := range fixed {
		require.Equal(t, want, cdxj.SURT(in), in)
	}

	urls := []string{
		"http://example.com/path;params?q=1&q=0&Q=2&&a",
		"https://EXAMPLE.com:8443/%7euser/%zz/?x=%e2%82%ac",
		"http://www.example.com./", "http://www.com/", "http://www1.www.example.com/",
		"http://example.com\\back\\slash", "http://example.com//double//slash",
		"http://example.com/%2e%2E/up", "http://ex%41mple.com/",
		"http://xn--bcher-kva.example/", "http://BÜCHER.example/ÜBER?Ä=Ö",
		"http://example.com/\u0130stanbul", "http://example.com/emoji/😀?😀=1&a=😀",
		"http://192.168.0.1./", "http://3232235521/", "http://[::ffff:1.2.3.4]/",
		"http://[2001:db8:0:0:0:0:0:1]:80/", "https://example.com:443",
		"http://example.com:0/", "http://example.com:65535/", "http://example.com:65536/",
		"http://", "http:example.com/relative", "https:/one-slash.example/",
		"http://a b.example/", "http://example.com/ tab\t/\n", " http://leading.space/",
		"http://example.com/?a=1&b=2&a=0&", "http://example.com/?%26=1&&=2",
		"http://example.com/<>\"'`{}|^", "http://example.com/?<>\"'`{}|^",
		"http://user:pass@www.example.com:81/", "http://-dash-.example/",
	}
	input, err := json.Marshal(urls)
	require.NoError(t, err)
	out := runNode(t, input, "--input-type=module", "-e", `
import { getSurt } from "warcio/utils";
import fs from "node:fs";
const urls = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(urls.map(getSurt)));
`)
	var want []string
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want, len(urls))
	for i, u := range urls {
		require.Equal(t, want[i], cdxj.SURT(u), "cdxj.SURT(%q)", u)
	}
}

func TestWriteBeside(t *testing.T) {
	dir := t.TempDir()
	block := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhi"
	p, err := writer.New(writer.Options{Dir: dir, Compression: warcscan.Gzip, Hostname: "test", Workers: 1}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{{
		Type: "response", TargetURI: "http://example.com/", ContentType: "application/http; msgtype=response",
		Date:  time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		Block: strings.NewReader(block), BlockLength: int64(len(block)),
	}}}))
	require.NoError(t, p.Close(context.Background()))
	paths := warcFiles(t, dir)
	require.Len(t, paths, 1)
	dst, err := cdxj.WriteBeside(paths[0])
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(paths[0], ".warc.gz")+".cdxj", dst)
	st, err := os.Stat(dst)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Regexp(t, `^com,example\)/ 20240102030405 \{"url":"http://example.com/","mime":"text/html","status":"200","length":"\d+","offset":"\d+","filename":"[^"]+\.warc\.gz"\}\n$`, string(got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 2, "the WARC and its index, no temporary file")

	_, err = cdxj.WriteBeside(filepath.Join(dir, "x.txt"))
	require.ErrorIs(t, err, cdxj.ErrNotWARC)
	_, err = cdxj.WriteBeside(filepath.Join(dir, "x.zst"))
	require.ErrorIs(t, err, cdxj.ErrNotWARC)
	dst, err = cdxj.WriteBeside(filepath.Join(dir, "x.warc.zst"))
	require.Error(t, err, "no such file")
	require.Empty(t, dst)
	_, err = cdxj.WriteBeside(filepath.Join(dir, "missing.warc.gz"))
	require.Error(t, err)
}

func TestIndexFileDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.warc.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte("WARC/1.0\r\nWARC-Type: resource\r\nContent-Length: 100\r\n\r\nshort"))
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, b.Bytes()[:b.Len()-3], 0o644))
	require.Error(t, cdxj.IndexFile(path, io.Discard))
}

// trainDict trains a zstd dictionary on a few hundred small records, as
// an operator would for --zstd-dictionary.
func trainDict(t *testing.T) []byte {
	t.Helper()
	var samples [][]byte
	for i := range 300 {
		samples = append(samples, fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://127.0.0.1/p%d\r\n"+
			"Content-Type: application/http; msgtype=response\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>GET /p%d</p>", i, i))
	}
	return zstdcli.Train(t, samples, 4096)
}

// requireSameIndexZstd checks WriteBeside's index of the .warc.zst file
// at path against warcio.js's, which does not read zstd: warcio.js indexes
// the file as the zstd command decompresses it, and the lines must agree
// but for where each record is (offset, length, filename). Where our lines
// say a record is, each range of the .warc.zst file alone (with the file's
// dictionary, dict, if any) must decompress, by the zstd command, to
// exactly that one record. It returns our lines.
func requireSameIndexZstd(t *testing.T, path string, dict []byte) []string {
	t.Helper()
	plain := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".zst"))
	require.NoError(t, os.WriteFile(plain, zstdcli.Decompress(t, path, dict), 0o644))
	dst, err := cdxj.WriteBeside(path)
	require.NoError(t, err)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	lines := sortedLines(string(got))
	require.Equal(t, withoutPlace(t, warcioIndex(t, plain)), withoutPlace(t, lines), "index of %s", filepath.Base(path))

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, l := range lines {
		var f struct{ URL, Offset, Length, Filename string }
		_, js, _ := strings.Cut(l[strings.IndexByte(l, ' ')+1:], " ")
		require.NoError(t, json.Unmarshal([]byte(js), &f))
		require.Equal(t, filepath.Base(path), f.Filename)
		var off, n int
		_, err := fmt.Sscan(f.Offset+" "+f.Length, &off, &n)
		require.NoError(t, err)
		unit := filepath.Join(t.TempDir(), "unit.zst")
		require.NoError(t, os.WriteFile(unit, data[off:off+n], 0o644))
		rec := zstdcli.Decompress(t, unit, dict)
		head, rest, ok := bytes.Cut(rec, []byte("\r\n\r\n"))
		require.True(t, ok, "line %s: no WARC header in its range", l)
		var cl int
		for _, h := range strings.Split(string(head), "\r\n") {
			if v, ok := strings.CutPrefix(h, "Content-Length: "); ok {
				_, err := fmt.Sscan(v, &cl)
				require.NoError(t, err)
			}
			if v, ok := strings.CutPrefix(h, "WARC-Target-URI: "); ok {
				require.Equal(t, f.URL, asWarcio(v), "line %s", l)
			}
		}
		require.Equal(t, cl+4, len(rest), "line %s: its range holds exactly one record", l)
		require.True(t, bytes.HasPrefix(rec, []byte("WARC/1.")), "line %s", l)
	}
	return lines
}

// withoutPlace drops where each record is (offset, length, filename) from
// index lines, and sorts them again.
func withoutPlace(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	re := regexp.MustCompile(`,"(offset|length|filename)":"[^"]*"`)
	for _, l := range lines {
		out = append(out, re.ReplaceAllString(l, ""))
	}
	slices.Sort(out)
	return out
}

// asWarcio is a header value as warcio.js reads it: one with a character
// above U+00FF becomes its UTF-8 bytes, one character each (see IndexFile).
func asWarcio(v string) string {
	if !strings.ContainsFunc(v, func(r rune) bool { return r > 0xff }) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		b.WriteRune(rune(v[i]))
	}
	return b.String()
}
