package warccheck

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nlnwa/gowarc/v3"
)

// fakeTB records failures instead of failing the test, so the checks can be
// run on files that must fail them. Methods it does not override go to the
// real test.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errs   []string
	fatals []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeTB) FailNow()          { f.Fatalf("FailNow") }
func (f *fakeTB) Fail()             { f.Errorf("Fail") }
func (f *fakeTB) Failed() bool      { return len(f.errs)+len(f.fatals) > 0 }

func (f *fakeTB) Logf(format string, args ...any) {
	f.TB.Helper()
	f.TB.Logf("(fake) "+format, args...)
}

// run calls fn with a fakeTB in its own goroutine, as Fatalf ends it.
func run(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func (f *fakeTB) all() string {
	return strings.Join(append(append([]string{}, f.errs...), f.fatals...), "\n")
}

// needNode skips a test of the warcio.js half where it cannot run, unless
// CI=true (where the check itself fails).
func needNode(t *testing.T) {
	t.Helper()
	if _, _, err := warcioCommand(); err != nil && !envCI() {
		t.Skipf("warcio.js check unavailable: %v; %s", err, skipHint)
	}
}

// --- building WARC files by hand ---

func sha1B32(p []byte) string {
	s := sha1.Sum(p)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

func sha256Hex(p []byte) string {
	s := sha256.Sum256(p)
	return "sha256:" + hex.EncodeToString(s[:])
}

type field struct{ name, value string }

// record is a WARC record to serialize. BlockDigest and PayloadDigest are
// written as given ("" leaves the field out).
type record struct {
	fields []field
	block  []byte
}

func (r record) bytes() []byte {
	var b bytes.Buffer
	b.WriteString("WARC/1.0\r\n")
	for _, f := range r.fields {
		fmt.Fprintf(&b, "%s: %s\r\n", f.name, f.value)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(r.block))
	b.Write(r.block)
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// set replaces (or adds) a field.
func (r record) set(name, value string) record {
	out := record{block: r.block}
	found := false
	for _, f := range r.fields {
		if f.name == name {
			f.value = value
			found = true
		}
		out.fields = append(out.fields, f)
	}
	if !found {
		out.fields = append(out.fields, field{name, value})
	}
	return out
}

const (
	infoID    = "<urn:uuid:00000000-0000-4000-8000-000000000001>"
	respID    = "<urn:uuid:00000000-0000-4000-8000-000000000002>"
	reqID     = "<urn:uuid:00000000-0000-4000-8000-000000000003>"
	resp2ID   = "<urn:uuid:00000000-0000-4000-8000-000000000004>"
	resp3ID   = "<urn:uuid:00000000-0000-4000-8000-000000000005>"
	testDate  = "2026-01-02T03:04:05Z"
	targetURI = "http://example.com/hello"
)

var (
	infoBlock = []byte("software: warccheck-test\r\nformat: WARC File Format 1.0\r\n")
	// A chunked response: its payload is "hello, world", the chunk framing
	// is not.
	chunkedHeader = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunkedBody   = "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
	chunkedResp   = []byte(chunkedHeader + chunkedBody)
	reqBlock      = []byte("GET /hello HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n")
)

// gzipped returns p gzip-compressed, as a content-coded body.
func gzipped(p []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(p); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// chunk frames body as one chunk plus the last chunk.
func chunk(body []byte) []byte {
	return append(append([]byte(fmt.Sprintf("%x\r\n", len(body))), body...), "\r\n0\r\n\r\n"...)
}

// validRecords is a good file's content: warcinfo, a chunked response with a
// sha1/base32 payload digest, its request, a chunked gzip-content-coded
// response with sha256/hex digests (the payload keeps the content coding),
// and a chunked 304 with an empty body.
func validRecords() []record {
	gzBody := gzipped([]byte("compressed hello"))
	gzResp := append([]byte("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"), chunk(gzBody)...)
	notMod := []byte("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n")
	return []record{
		{fields: []field{
			{"WARC-Type", "warcinfo"},
			{"WARC-Record-ID", infoID},
			{"WARC-Date", testDate},
			{"WARC-Filename", "test.warc.gz"},
			{"Content-Type", "application/warc-fields"},
			{"WARC-Block-Digest", sha1B32(infoBlock)},
		}, block: infoBlock},
		{fields: []field{
			{"WARC-Type", "response"},
			{"WARC-Record-ID", respID},
			{"WARC-Date", testDate},
			{"WARC-Target-URI", targetURI},
			{"WARC-IP-Address", "127.0.0.1"},
			{"Content-Type", "application/http; msgtype=response"},
			{"WARC-Payload-Digest", sha1B32([]byte("hello, world"))},
			{"WARC-Block-Digest", sha1B32(chunkedResp)},
		}, block: chunkedResp},
		{fields: []field{
			{"WARC-Type", "request"},
			{"WARC-Record-ID", reqID},
			{"WARC-Date", testDate},
			{"WARC-Target-URI", targetURI},
			{"WARC-Concurrent-To", respID},
			{"Content-Type", "application/http; msgtype=request"},
			{"WARC-Payload-Digest", sha1B32(nil)},
			{"WARC-Block-Digest", sha1B32(reqBlock)},
		}, block: reqBlock},
		{fields: []field{
			{"WARC-Type", "response"},
			{"WARC-Record-ID", resp2ID},
			{"WARC-Date", testDate},
			{"WARC-Target-URI", targetURI + ".gz"},
			{"Content-Type", "application/http; msgtype=response"},
			{"WARC-Payload-Digest", sha256Hex(gzBody)},
			{"WARC-Block-Digest", sha256Hex(gzResp)},
		}, block: gzResp},
		{fields: []field{
			{"WARC-Type", "response"},
			{"WARC-Record-ID", resp3ID},
			{"WARC-Date", testDate},
			{"WARC-Target-URI", targetURI + "?304"},
			{"Content-Type", "application/http; msgtype=response"},
			{"WARC-Payload-Digest", sha1B32(nil)},
			{"WARC-Block-Digest", sha1B32(notMod)},
		}, block: notMod},
	}
}

// writeWARC writes records to path, one gzip member per group when
// compressed, where groups[i] is how many records member i holds (nil: one
// each).
func writeWARC(t *testing.T, path string, recs []record, groups []int) {
	t.Helper()
	var out bytes.Buffer
	if !strings.HasSuffix(strings.TrimSuffix(path, ".open"), ".gz") {
		for _, r := range recs {
			out.Write(r.bytes())
		}
	} else {
		if groups == nil {
			for range recs {
				groups = append(groups, 1)
			}
		}
		i := 0
		for _, n := range groups {
			zw := gzip.NewWriter(&out)
			for range n {
				if _, err := zw.Write(recs[i].bytes()); err != nil {
					t.Fatal(err)
				}
				i++
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --- tests ---

func TestValidFilePasses(t *testing.T) {
	for _, ext := range []string{".warc.gz", ".warc"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a"+ext)
			writeWARC(t, path, validRecords(), nil)

			t.Run("gowarc", func(t *testing.T) {
				f := run(t, func(tb testing.TB) {
					checkGowarc(&reporter{t: tb, prefix: "gowarc"}, []string{path}, false)
				})
				if f.Failed() {
					t.Fatalf("gowarc path failed a valid file:\n%s", f.all())
				}
			})
			t.Run("warcio", func(t *testing.T) {
				needNode(t)
				f := run(t, func(tb testing.TB) {
					if _, ran := checkWarcio(&reporter{t: tb, prefix: "warcio"}, []string{path}, false, nil); !ran {
						tb.Errorf("warcio.js check did not run")
					}
				})
				if f.Failed() {
					t.Fatalf("warcio.js path failed a valid file:\n%s", f.all())
				}
			})

			recs := Dir(t, dir)
			var offsets []int64
			for _, r := range recs {
				offsets = append(offsets, r.Offset)
			}
			want := []Record{
				{File: "a" + ext, Type: "warcinfo", ID: infoID, Block: infoBlock},
				{File: "a" + ext, Type: "response", ID: respID, TargetURI: targetURI, Block: chunkedResp},
				{File: "a" + ext, Type: "request", ID: reqID, TargetURI: targetURI, Block: reqBlock},
			}
			got := recs[:3]
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Record{}, "Offset", "Date", "Header", "BlockLen", "BlockSHA1")); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if len(recs) != 5 {
				t.Errorf("got %d records, want 5", len(recs))
			}
			for i, r := range recs {
				if i > 0 && r.Offset <= recs[i-1].Offset {
					t.Errorf("offsets not increasing: %v", offsets)
				}
				sum := sha1.Sum(r.Block)
				if r.BlockSHA1 != hex.EncodeToString(sum[:]) || r.BlockLen != int64(len(r.Block)) {
					t.Errorf("record %d: BlockSHA1 %s BlockLen %d do not match its block", i, r.BlockSHA1, r.BlockLen)
				}
				if !r.Date.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
					t.Errorf("record %d: Date %v", i, r.Date)
				}
			}
			if recs[0].Offset != 0 {
				t.Errorf("first offset %d, want 0", recs[0].Offset)
			}
			if ext == ".warc" && recs[1].Offset != int64(len(validRecords()[0].bytes())) {
				t.Errorf("second offset %d, want %d", recs[1].Offset, len(validRecords()[0].bytes()))
			}
			if got, want := recs[2].Header["WARC-Concurrent-To"], respID; got != want {
				t.Errorf(`Header["WARC-Concurrent-To"] = %q, want %q`, got, want)
			}
			if got, want := recs[1].Header["WARC-IP-Address"], "127.0.0.1"; got != want {
				t.Errorf(`Header["WARC-IP-Address"] = %q, want %q`, got, want)
			}
			if got := recs[1].Header["Content-Length"]; got != fmt.Sprint(len(chunkedResp)) {
				t.Errorf(`Header["Content-Length"] = %q`, got)
			}
		})
	}
}

func TestLargeBlockNotKept(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("x"), maxKeptBlock+1)
	recs := validRecords()[:1]
	recs = append(recs, record{fields: []field{
		{"WARC-Type", "resource"},
		{"WARC-Record-ID", respID},
		{"WARC-Date", testDate},
		{"WARC-Target-URI", targetURI},
		{"Content-Type", "text/plain"},
		{"WARC-Payload-Digest", sha1B32(big)},
		{"WARC-Block-Digest", sha1B32(big)},
	}, block: big})
	writeWARC(t, filepath.Join(dir, "big.warc.gz"), recs, nil)
	got := Dir(t, dir)
	sum := sha1.Sum(big)
	if got[1].Block != nil || got[1].BlockLen != int64(len(big)) || got[1].BlockSHA1 != hex.EncodeToString(sum[:]) {
		t.Errorf("big block: Block kept %v, BlockLen %d, BlockSHA1 %s", got[1].Block != nil, got[1].BlockLen, got[1].BlockSHA1)
	}
}

func TestFilesAcceptsOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.warc.gz.open")
	writeWARC(t, path, validRecords(), nil)
	if got := len(Files(t, path)); got != 5 {
		t.Errorf("got %d records, want 5", got)
	}
}

func TestDirOrder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeWARC(t, filepath.Join(dir, "sub", "b.warc"), validRecords()[:2], nil)
	writeWARC(t, filepath.Join(dir, "c.warc.gz"), validRecords()[:1], nil)
	writeWARC(t, filepath.Join(dir, "a.warc.gz"), validRecords()[:1], nil)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a warc"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Dir(t, dir) {
		got = append(got, fmt.Sprintf("%s@%d", r.File, r.Offset))
	}
	want := []string{"a.warc.gz@0", "b.warc@0", fmt.Sprintf("b.warc@%d", len(validRecords()[0].bytes())), "c.warc.gz@0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestDetects checks that each broken file is caught by the gowarc half and
// by the warcio.js half on its own, and by Dir.
func TestDetects(t *testing.T) {
	cases := []struct {
		name string
		// write writes the broken files into dir.
		write      func(t *testing.T, dir, ext string)
		exts       []string
		gowarcWant string // a reported problem contains this
		warcioWant string
	}{
		{
			name: "wrong block digest",
			write: func(t *testing.T, dir, ext string) {
				recs := validRecords()
				recs[2] = recs[2].set("WARC-Block-Digest", sha1B32([]byte("something else")))
				writeWARC(t, filepath.Join(dir, "a"+ext), recs, nil)
			},
			gowarcWant: "block: wrong digest",
			warcioWant: "WARC-Block-Digest mismatch",
		},
		{
			name: "wrong sha256 hex block digest",
			write: func(t *testing.T, dir, ext string) {
				recs := validRecords()
				recs[3] = recs[3].set("WARC-Block-Digest", sha256Hex([]byte("something else")))
				writeWARC(t, filepath.Join(dir, "a"+ext), recs, nil)
			},
			gowarcWant: "block: wrong digest",
			warcioWant: "WARC-Block-Digest mismatch",
		},
		{
			// What a writer gets by hashing the body as it came off the
			// wire: gowarc alone accepts this.
			name: "payload digest over the chunk framing",
			write: func(t *testing.T, dir, ext string) {
				recs := validRecords()
				recs[1] = recs[1].set("WARC-Payload-Digest", sha1B32([]byte(chunkedBody)))
				writeWARC(t, filepath.Join(dir, "a"+ext), recs, nil)
			},
			gowarcWant: "WARC-Payload-Digest (over the de-chunked body) mismatch",
			warcioWant: "WARC-Payload-Digest mismatch",
		},
		{
			// What a writer gets by hashing the decoded content.
			name: "payload digest over the content-decoded body",
			write: func(t *testing.T, dir, ext string) {
				recs := validRecords()
				recs[3] = recs[3].set("WARC-Payload-Digest", sha256Hex([]byte("compressed hello")))
				writeWARC(t, filepath.Join(dir, "a"+ext), recs, nil)
			},
			gowarcWant: "WARC-Payload-Digest (over the de-chunked body) mismatch",
			warcioWant: "WARC-Payload-Digest mismatch",
		},
		{
			name: "wrong payload digest of an unchunked body",
			write: func(t *testing.T, dir, ext string) {
				recs := validRecords()
				recs[2] = recs[2].set("WARC-Payload-Digest", sha1B32([]byte("x")))
				writeWARC(t, filepath.Join(dir, "a"+ext), recs, nil)
			},
			gowarcWant: "payload: wrong digest",
			warcioWant: "WARC-Payload-Digest mismatch",
		},
		{
			name: "first record not warcinfo",
			write: func(t *testing.T, dir, ext string) {
				writeWARC(t, filepath.Join(dir, "a"+ext), validRecords()[1:], nil)
			},
			gowarcWant: `first record is "response", want warcinfo`,
			warcioWant: `first record is "response", want warcinfo`,
		},
		{
			name: "two records in one gzip member",
			write: func(t *testing.T, dir, ext string) {
				writeWARC(t, filepath.Join(dir, "a"+ext), validRecords(), []int{1, 2, 1, 1})
			},
			exts:       []string{".warc.gz"},
			gowarcWant: "gzip member at offset 260 holds 2 records",
			warcioWant: "5 records in 4 gzip members",
		},
		{
			name: "leftover open file",
			write: func(t *testing.T, dir, ext string) {
				writeWARC(t, filepath.Join(dir, "a"+ext), validRecords(), nil)
				writeWARC(t, filepath.Join(dir, "b"+ext+".open"), validRecords(), nil)
			},
			gowarcWant: "still open",
			warcioWant: "still open",
		},
	}
	for _, tc := range cases {
		exts := tc.exts
		if exts == nil {
			exts = []string{".warc.gz", ".warc"}
		}
		for _, ext := range exts {
			t.Run(tc.name+"/"+ext, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tc.write(t, dir, ext)
				paths, others, err := scanDir(dir)
				if err != nil || len(others) > 0 {
					t.Fatalf("scanDir: %v %v", others, err)
				}

				t.Run("gowarc", func(t *testing.T) {
					f := run(t, func(tb testing.TB) {
						checkGowarc(&reporter{t: tb, prefix: "gowarc"}, paths, false)
					})
					t.Logf("reported:\n%s", f.all())
					if !strings.Contains(f.all(), tc.gowarcWant) {
						t.Errorf("gowarc path: want a problem containing %q, got:\n%s", tc.gowarcWant, f.all())
					}
				})
				t.Run("warcio", func(t *testing.T) {
					needNode(t)
					f := run(t, func(tb testing.TB) {
						checkWarcio(&reporter{t: tb, prefix: "warcio"}, paths, false, nil)
					})
					t.Logf("reported:\n%s", f.all())
					if !strings.Contains(f.all(), tc.warcioWant) {
						t.Errorf("warcio.js path: want a problem containing %q, got:\n%s", tc.warcioWant, f.all())
					}
				})
				t.Run("Dir", func(t *testing.T) {
					f := run(t, func(tb testing.TB) { Dir(tb, dir) })
					if len(f.fatals) == 0 {
						t.Errorf("Dir did not fail the test; reported:\n%s", f.all())
					}
				})
			})
		}
	}
}

// TestRecordSplitOverMembers checks the other way members can fail to be
// one per record: a record split over two members.
func TestRecordSplitOverMembers(t *testing.T) {
	dir := t.TempDir()
	recs := validRecords()
	var out bytes.Buffer
	for i, r := range recs {
		b := r.bytes()
		parts := [][]byte{b}
		if i == 1 {
			parts = [][]byte{b[:40], b[40:]}
		}
		for _, p := range parts {
			out.Write(gzipped(p))
		}
	}
	path := filepath.Join(dir, "a.warc.gz")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f := run(t, func(tb testing.TB) {
		checkGowarc(&reporter{t: tb, prefix: "gowarc"}, []string{path}, false)
	})
	if !f.Failed() {
		t.Errorf("gowarc path accepted a record split over two gzip members")
	}
	t.Run("warcio", func(t *testing.T) {
		needNode(t)
		f := run(t, func(tb testing.TB) {
			checkWarcio(&reporter{t: tb, prefix: "warcio"}, []string{path}, false, nil)
		})
		if !f.Failed() {
			t.Errorf("warcio.js path accepted a record split over two gzip members")
		}
	})
}

// TestWarcioSkip checks what happens without node: a log line normally, a
// fatal failure with CI=true.
func TestWarcioSkip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.warc")
	writeWARC(t, path, validRecords(), nil)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	f := run(t, func(tb testing.TB) { Files(tb, path) })
	if f.Failed() {
		t.Errorf("without node and CI unset: failed:\n%s", f.all())
	}
	t.Setenv("CI", "true")
	f = run(t, func(tb testing.TB) { Files(tb, path) })
	if len(f.fatals) == 0 || !strings.Contains(f.all(), "npm ci --prefix internal/testutil/warcio") {
		t.Errorf("without node and CI=true: want a fatal failure naming the fix, got:\n%s", f.all())
	}
}

// TestManyRecords makes the two readers agree on offsets, lengths and ids
// over files larger than their read buffers, with blocks from empty to
// beyond 1 MiB.
func TestManyRecords(t *testing.T) {
	for _, ext := range []string{".warc.gz", ".warc"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			recs := validRecords()[:1]
			sizes := []int{0, 1, 100, 4095, 4096, 65535, 65536, 65537, 200000, maxKeptBlock + 3}
			for i := range 60 {
				body := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
				block := append([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))), body...)
				recs = append(recs, record{fields: []field{
					{"WARC-Type", "response"},
					{"WARC-Record-ID", fmt.Sprintf("<urn:uuid:00000000-0000-4000-8000-%012d>", 100+i)},
					{"WARC-Date", testDate},
					{"WARC-Target-URI", fmt.Sprintf("%s/%d", targetURI, i)},
					{"Content-Type", "application/http; msgtype=response"},
					{"WARC-Payload-Digest", sha1B32(body)},
					{"WARC-Block-Digest", sha1B32(block)},
				}, block: block})
			}
			writeWARC(t, filepath.Join(dir, "many"+ext), recs, nil)
			got := Dir(t, dir)
			if len(got) != len(recs) {
				t.Fatalf("got %d records, want %d", len(got), len(recs))
			}
			for i, r := range got {
				if r.BlockLen != int64(len(recs[i].block)) {
					t.Errorf("record %d: BlockLen %d, want %d", i, r.BlockLen, len(recs[i].block))
				}
			}
		})
	}
}

// TestGowarcWriterOutput reads a file written by gowarc's own writer, as a
// check that the strict options accept a third-party writer's output.
func TestGowarcWriterOutput(t *testing.T) {
	dir := t.TempDir()
	w := gowarc.NewWarcFileWriter(
		gowarc.WithCompression(true),
		gowarc.WithFileNameGenerator(&gowarc.PatternNameGenerator{Directory: dir, Prefix: "gw-"}),
		gowarc.WithRecordOptions(gowarc.WithVersion(gowarc.V1_0), gowarc.WithDefaultDigestAlgorithm("sha1")),
		gowarc.WithMaxConcurrentWriters(1),
		gowarc.WithWarcInfoFunc(func(rb gowarc.WarcRecordBuilder) error {
			_, err := rb.WriteString("software: warccheck-test\r\n")
			return err
		}),
	)
	rb := gowarc.NewRecordBuilder(gowarc.Response, gowarc.WithVersion(gowarc.V1_0), gowarc.WithDefaultDigestAlgorithm("sha1"), gowarc.WithAddMissingDigest(true))
	rb.AddWarcHeader(gowarc.WarcTargetURI, targetURI)
	rb.AddWarcHeaderTime(gowarc.WarcDate, time.Now())
	rb.AddWarcHeader(gowarc.ContentType, gowarc.ApplicationHttp+"; msgtype=response")
	if _, err := rb.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"); err != nil {
		t.Fatal(err)
	}
	rec, _, err := rb.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range w.Write(rec) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := Dir(t, dir)
	if len(got) != 2 || got[1].Header["WARC-Payload-Digest"] != sha1B32([]byte("hello")) {
		t.Errorf("got %d records; response header %v", len(got), got[len(got)-1].Header)
	}
}
