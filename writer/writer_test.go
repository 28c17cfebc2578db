package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// enqueueAll enqueues the captures in order and fails the test on an error.
func enqueueAll(t testing.TB, p *Pool, cs ...*Capture) {
	t.Helper()
	for _, c := range cs {
		require.NoError(t, p.Enqueue(context.Background(), c))
	}
}

func closePool(t testing.TB, p *Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, p.Close(ctx))
}

// byFile groups records by file, keeping file and offset order.
func byFile(recs []warccheck.Record) map[string][]warccheck.Record {
	m := make(map[string][]warccheck.Record)
	for _, r := range recs {
		m[r.File] = append(m[r.File], r)
	}
	return m
}

// checkFiles verifies what every test expects of the files in dir: valid
// in both readers, warcinfo first with the file's name, every other record
// pointing at its file's warcinfo, the records of a capture consecutive,
// response then request, and each capture exactly once. It returns the
// records by file.
func checkFiles(t testing.TB, dir string, captures int) map[string][]warccheck.Record {
	t.Helper()
	recs := warccheck.Dir(t, dir)
	files := byFile(recs)
	seen := make(map[string]int)
	for name, rs := range files {
		require.Equal(t, "warcinfo", rs[0].Type, "first record of %s", name)
		require.Equal(t, name, rs[0].Header["WARC-Filename"], "WARC-Filename of %s", name)
		require.NotContains(t, rs[0].Header, "WARC-Warcinfo-ID")
		rest := rs[1:]
		require.Zero(t, len(rest)%2, "%s holds a split capture", name)
		for i := 0; i < len(rest); i += 2 {
			resp, req := rest[i], rest[i+1]
			require.Equal(t, "response", resp.Type, name)
			require.Equal(t, "request", req.Type, name)
			require.Equal(t, resp.TargetURI, req.TargetURI, "records of one capture apart in %s", name)
			require.Equal(t, resp.ID, req.Header["WARC-Concurrent-To"])
			for _, r := range []warccheck.Record{resp, req} {
				require.Equal(t, rs[0].ID, r.Header["WARC-Warcinfo-ID"], "warcinfo id in %s", name)
			}
			seen[resp.TargetURI]++
		}
	}
	require.Len(t, seen, captures)
	for uri, n := range seen {
		require.Equal(t, 1, n, "copies of %s", uri)
	}
	return files
}

func TestFormat(t *testing.T) {
	dateRE := map[string]*regexp.Regexp{
		"1.0": regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`),
		"1.1": regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`),
	}
	digestRE := map[string]*regexp.Regexp{
		"sha1/base32":   regexp.MustCompile(`^sha1:[A-Z2-7]{32}$`),
		"sha1/hex":      regexp.MustCompile(`^sha1:[0-9a-f]{40}$`),
		"sha256/base32": regexp.MustCompile(`^sha256:[A-Z2-7]{52}=*$`),
		"sha256/hex":    regexp.MustCompile(`^sha256:[0-9a-f]{64}$`),
	}
	tests := []struct {
		codec   warcscan.Codec
		version string
		alg     digest.Algorithm
		base32  bool
	}{
		{codec: warcscan.Gzip, version: "", alg: "", base32: true}, // defaults: 1.0, sha1
		{codec: warcscan.None, version: "1.0", alg: digest.SHA1, base32: false},
		{codec: warcscan.Gzip, version: "1.1", alg: digest.SHA256, base32: true},
		{codec: warcscan.None, version: "1.1", alg: digest.SHA256, base32: false},
		{codec: warcscan.Gzip, version: "1.0", alg: digest.SHA256, base32: false},
		{codec: warcscan.Zstd, version: "", alg: "", base32: true},
		{codec: warcscan.Zstd, version: "1.1", alg: digest.SHA256, base32: false},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("compression=%s/version=%s/digest=%s/base32=%v", tt.codec.Name(), tt.version, tt.alg, tt.base32)
		t.Run(name, func(t *testing.T) {
			p, dir := newPool(t, Options{
				Workers: 1, Compression: tt.codec, WARCVersion: tt.version, Digest: tt.alg, Base32: tt.base32,
				Software:       "warcproxy/test",
				WarcinfoFields: []Field{{"operator", "Test Archive <archive@example.org>"}, {"isPartOf", "crawl-7"}},
			})
			tr := newTracker()
			const n = 5
			for i := range n {
				c := makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 100 + 1000*i, compressible: i%2 == 0, seed: uint64(i)}, tr)
				c.Records[1].Date = time.Time{} // the pool stamps it
				enqueueAll(t, p, c)
			}
			closePool(t, p)
			tr.requireAll(t, n, nil)

			version := tt.version
			if version == "" {
				version = "1.0"
			}
			alg := tt.alg
			if alg == "" {
				alg = digest.SHA1
			}
			enc := "hex"
			if tt.base32 {
				enc = "base32"
			}
			files := checkFiles(t, dir, n)
			require.Len(t, files, 1)
			for name, recs := range files {
				require.True(t, strings.HasSuffix(name, ".warc"+tt.codec.Ext()), name)
				info := recs[0]
				require.Equal(t, "application/warc-fields", info.Header["Content-Type"])
				require.Equal(t, "software: warcproxy/test\r\n"+
					"format: WARC File Format "+version+"\r\n"+
					"conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-"+version+"/\r\n"+
					"hostname: crawler1.example.org\r\n"+
					"operator: Test Archive <archive@example.org>\r\n"+
					"isPartOf: crawl-7\r\n", string(info.Block))
				require.Regexp(t, digestRE[string(alg)+"/"+enc], info.Header["WARC-Block-Digest"])
				for _, r := range recs {
					require.Regexp(t, dateRE[version], r.Header["WARC-Date"], r.Type)
					require.Regexp(t, `^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`, r.ID)
					if r.Type != "warcinfo" {
						// computed by the pool when the capture had none
						require.Regexp(t, digestRE[string(alg)+"/"+enc], r.Header["WARC-Block-Digest"])
					}
				}
				if version == "1.1" {
					require.Equal(t, "2024-05-06T07:08:09.123456Z", recs[1].Header["WARC-Date"])
				} else {
					require.Equal(t, "2024-05-06T07:08:09Z", recs[1].Header["WARC-Date"])
				}

				// Header lines in the contract's order, one gzip member
				// (or zstd frame: warccheck) per record.
				raw := rawRecords(t, filepath.Join(dir, name))
				require.Len(t, raw, len(recs))
				require.Equal(t, []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Filename",
					"WARC-Block-Digest", "Content-Type", "Content-Length"}, raw[0].names)
				require.Equal(t, []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
					"WARC-Warcinfo-ID", "WARC-IP-Address", "WARC-Payload-Digest",
					"WARC-Block-Digest", "Content-Type", "Content-Length"}, raw[1].names)
				require.Equal(t, []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
					"WARC-Warcinfo-ID", "WARC-Concurrent-To",
					"WARC-Block-Digest", "Content-Type", "Content-Length"}, raw[2].names)
				for _, r := range raw {
					require.Equal(t, "WARC/"+version, r.version)
				}
			}
		})
	}
}

func TestGivenDigestsAndIDsAreKept(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Digest: digest.SHA256})
	tr := newTracker()
	c := makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 3000, giveDigest: true, giveIDs: true}, tr)
	want := slices.Clone(c.Records)
	enqueueAll(t, p, c)
	closePool(t, p)
	tr.requireAll(t, 1, nil)
	recs := checkFiles(t, dir, 1)
	for _, rs := range recs {
		for i, r := range rs[1:] {
			require.Equal(t, want[i].ID, r.ID)
			require.Equal(t, want[i].BlockDigest, r.Header["WARC-Block-Digest"])
		}
	}
}

func TestAssignedValuesAreReported(t *testing.T) {
	p, dir := newPool(t, Options{})
	done := make(chan error, 1)
	c := makeCapture(t, captureSpec{uri: "http://example.org/x", bodySize: 10}, nil)
	c.Records[1].Date = time.Time{}
	c.Done = func(err error) { done <- err }
	enqueueAll(t, p, c)
	require.NoError(t, <-done)
	closePool(t, p)
	recs := warccheck.Dir(t, dir)
	require.Len(t, recs, 3)
	req := recs[2]
	require.Equal(t, req.ID, c.Records[1].ID)
	require.Equal(t, req.Header["WARC-Block-Digest"], c.Records[1].BlockDigest)
	require.WithinDuration(t, time.Now(), c.Records[1].Date, time.Minute)
}

func TestFilenameTemplate(t *testing.T) {
	tests := []struct {
		name     string
		template string
		prefix   string // Capture.Prefix
		codec    warcscan.Codec
		want     string // regexp of the file name
	}{
		{"default", "", "", warcscan.Gzip, `^WARCPROX-\d{17}-00000-[a-z0-9]{8}\.warc\.gz$`},
		{"default/capture prefix", "", "job-7", warcscan.None, `^job-7-\d{17}-00000-[a-z0-9]{8}\.warc$`},
		{"default/zstd", "", "", warcscan.Zstd, `^WARCPROX-\d{17}-00000-[a-z0-9]{8}\.warc\.zst$`},
		{"timestamp14", "{prefix}-{timestamp14}-{serialno}", "", warcscan.Gzip, `^WARCPROX-\d{14}-00000\.warc\.gz$`},
		{"hosts and port", "{prefix}-{hostname}-{shorthostname}-{port}-{serialno}", "p", warcscan.Gzip,
			`^p-crawler1\.example\.org-crawler1-8000-00000\.warc\.gz$`},
		{"braces", "{{x}}-{serialno}", "", warcscan.Gzip, `^\{x\}-00000\.warc\.gz$`},
		{"randomtoken", "{randomtoken}", "", warcscan.Gzip, `^[a-z0-9]{8}\.warc\.gz$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, dir := newPool(t, Options{FilenameTemplate: tt.template, Compression: tt.codec, Port: 8000})
			c := makeCapture(t, captureSpec{uri: "http://example.org/", prefix: tt.prefix, bodySize: 10}, nil)
			enqueueAll(t, p, c)
			closePool(t, p)
			names := dirNames(t, dir)
			require.Len(t, names, 1)
			require.Regexp(t, tt.want, names[0])
			checkFiles(t, dir, 1)
		})
	}

	t.Run("timestamp17 is now", func(t *testing.T) {
		before := time.Now().UTC().Truncate(time.Millisecond)
		p, dir := newPool(t, Options{FilenameTemplate: "{timestamp17}"})
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 10}, nil))
		closePool(t, p)
		names := dirNames(t, dir)
		require.Len(t, names, 1)
		ts, err := time.Parse("20060102150405.000", names[0][:14]+"."+names[0][14:17])
		require.NoError(t, err)
		require.False(t, ts.Before(before), "%s before %s", ts, before)
		require.WithinDuration(t, before, ts, time.Minute)
	})

	t.Run("existing name takes the next serial", func(t *testing.T) {
		dir := t.TempDir()
		for _, name := range []string{"x-00000.warc.gz", "x-00001.warc.gz.open"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("keep"), 0o644))
		}
		p, _ := newPool(t, Options{Dir: dir, FilenameTemplate: "{prefix}-{serialno}", Prefix: "x", Compression: warcscan.Gzip})
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 10}, nil))
		closePool(t, p)
		require.ElementsMatch(t, []string{"x-00000.warc.gz", "x-00001.warc.gz.open", "x-00002.warc.gz"}, dirNames(t, dir))
		for _, name := range []string{"x-00000.warc.gz", "x-00001.warc.gz.open"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			require.Equal(t, "keep", string(b), "overwrote %s", name)
		}
		warccheck.Files(t, filepath.Join(dir, "x-00002.warc.gz"))
	})

	// A template without {serialno} renders the same name for every file:
	// the writer used to retry that taken name until shutdown dropped the
	// captures waiting behind it.
	t.Run("a name rendered again is numbered", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x.warc.gz"), []byte("keep"), 0o644))
		p, _ := newPool(t, Options{Dir: dir, FilenameTemplate: "{prefix}", Prefix: "x", Compression: warcscan.Gzip,
			RolloverSize: 1, Workers: 1})
		for range 3 {
			enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 10}, nil))
		}
		closePool(t, p)
		require.ElementsMatch(t, []string{"x.warc.gz", "x-1.warc.gz", "x-2.warc.gz", "x-3.warc.gz"}, dirNames(t, dir))
		b, err := os.ReadFile(filepath.Join(dir, "x.warc.gz"))
		require.NoError(t, err)
		require.Equal(t, "keep", string(b))
		warccheck.Files(t, filepath.Join(dir, "x-1.warc.gz"), filepath.Join(dir, "x-2.warc.gz"), filepath.Join(dir, "x-3.warc.gz"))
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no dir", Options{Dir: ""}},
		{"unknown placeholder", Options{Dir: "d", FilenameTemplate: "{prefix}-{pid}"}},
		{"unclosed brace", Options{Dir: "d", FilenameTemplate: "{prefix"}},
		{"single close brace", Options{Dir: "d", FilenameTemplate: "a}b"}},
		{"slash in template", Options{Dir: "d", FilenameTemplate: "a/{serialno}"}},
		{"bad prefix", Options{Dir: "d", Prefix: "../up"}},
		{"version", Options{Dir: "d", WARCVersion: "0.9"}},
		{"digest", Options{Dir: "d", Digest: "md5"}},
		{"gzip level", Options{Dir: "d", GzipLevel: 12}},
		{"workers", Options{Dir: "d", Workers: -1}},
		{"queue", Options{Dir: "d", QueueSize: -1}},
		{"rollover size", Options{Dir: "d", RolloverSize: -1}},
		{"rollover idle", Options{Dir: "d", RolloverIdle: -time.Second}},
		{"warcinfo field name", Options{Dir: "d", WarcinfoFields: []Field{{"bad name", "x"}}}},
		{"warcinfo field value", Options{Dir: "d", WarcinfoFields: []Field{{"operator", "a\r\nb"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Dir != "" {
				tt.opts.Dir = filepath.Join(t.TempDir(), tt.opts.Dir)
			}
			p, err := New(tt.opts, nil)
			require.Error(t, err)
			require.Nil(t, p)
		})
	}
}

func TestEnqueueRejectsBadCaptures(t *testing.T) {
	good := func() *Capture { return makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 10}, nil) }
	tests := []struct {
		name   string
		modify func(c *Capture)
	}{
		{"no records", func(c *Capture) { c.Records = nil }},
		{"prefix with slash", func(c *Capture) { c.Prefix = "a/b" }},
		{"dot prefix", func(c *Capture) { c.Prefix = ".hidden" }},
		{"no type", func(c *Capture) { c.Records[0].Type = "" }},
		{"CRLF in target URI", func(c *Capture) { c.Records[0].TargetURI = "http://x/\r\nWARC-Type: evil" }},
		{"LF in field", func(c *Capture) { c.Records[0].Fields[0].Value = "a\nb" }},
		{"bad field name", func(c *Capture) { c.Records[0].Fields[0].Name = "WARC IP" }},
		{"own field repeated", func(c *Capture) { c.Records[0].Fields = append(c.Records[0].Fields, Field{"content-length", "1"}) }},
		{"id without brackets", func(c *Capture) { c.Records[0].ID = "urn:uuid:x" }},
		{"negative length", func(c *Capture) { c.Records[0].BlockLength = -1 }},
		{"no block", func(c *Capture) { c.Records[0].Block = nil }},
	}
	p, dir := newPool(t, Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			called := false
			c.Done = func(error) { called = true }
			tt.modify(c)
			require.Error(t, p.Enqueue(context.Background(), c))
			require.False(t, called)
		})
	}
	require.Error(t, p.Enqueue(context.Background(), nil))
	closePool(t, p)
	require.Empty(t, dirNames(t, dir))
	require.Zero(t, p.Stats().CapturesWritten)
}

// TestWorkers writes many captures from many goroutines through 4 workers
// and two prefixes, with files rolling over often.
func TestWorkers(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 4, QueueSize: 16, RolloverSize: 64 << 10, Base32: true})
	tr := newTracker()
	const producers, perProducer = 8, 150
	var wg sync.WaitGroup
	for g := range producers {
		wg.Go(func() {
			for i := range perProducer {
				n := g*perProducer + i
				prefix := []string{"", "job-a"}[n%2]
				c := makeCapture(t, captureSpec{
					uri: fmt.Sprintf("http://example.org/%d", n), prefix: prefix,
					bodySize: 200 + (n*37)%6000, compressible: n%3 != 0, seed: uint64(n), giveDigest: n%2 == 0,
				}, tr)
				if err := p.Enqueue(context.Background(), c); err != nil {
					t.Errorf("enqueue %d: %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	closePool(t, p)
	const total = producers * perProducer
	tr.requireAll(t, total, nil)

	files := checkFiles(t, dir, total)
	require.Greater(t, len(files), 8, "expected rollovers")
	// Serial numbers are unique per prefix across workers.
	serialRE := regexp.MustCompile(`^(.*)-\d{17}-(\d{5})-[a-z0-9]{8}\.warc\.gz$`)
	serials := make(map[string]bool)
	var size int64
	for name := range files {
		m := serialRE.FindStringSubmatch(name)
		require.NotNil(t, m, name)
		key := m[1] + "/" + m[2]
		require.False(t, serials[key], "serial used twice: %s", key)
		serials[key] = true
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		size += fi.Size()
	}

	s := p.Stats()
	require.Equal(t, uint64(total), s.CapturesWritten)
	require.Equal(t, uint64(2*total+len(files)), s.RecordsWritten)
	require.Equal(t, map[string]uint64{"warcinfo": uint64(len(files)), "response": total, "request": total}, s.RecordsByType)
	require.Equal(t, uint64(size), s.BytesWritten)
	require.Equal(t, uint64(len(files)), s.FilesClosed)
	require.Zero(t, s.FilesOpen)
	require.Zero(t, s.WriteErrors)
	require.Zero(t, s.CapturesDropped)
	require.Equal(t, 16, s.QueueCap)
}

func TestRolloverBySize(t *testing.T) {
	p, dir := newPool(t, Options{Workers: 1, Compression: warcscan.Gzip, RolloverSize: 20 << 10, FilenameTemplate: "{prefix}-{serialno}"})
	tr := newTracker()
	small := func(i int) *Capture {
		return makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/small/%d", i), bodySize: 3000, seed: uint64(i)}, tr)
	}
	enqueueAll(t, p, small(0), small(1))
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/huge", bodySize: 100 << 10, seed: 99}, tr))
	for i := 2; i < 12; i++ {
		enqueueAll(t, p, small(i))
	}
	closePool(t, p)
	tr.requireAll(t, 13, nil)
	files := checkFiles(t, dir, 13)

	// The huge capture is alone in the second file.
	huge := files["WARCPROX-00001.warc.gz"]
	require.Len(t, huge, 3)
	require.Equal(t, "http://example.org/huge", huge[1].TargetURI)
	// The files after it reached the rollover size with their last
	// capture (but the last file), and were below it before.
	for name, recs := range files {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		if name != "WARCPROX-00000.warc.gz" && name != fmt.Sprintf("WARCPROX-%05d.warc.gz", len(files)-1) {
			require.GreaterOrEqual(t, fi.Size(), int64(20<<10), name)
		}
		if name != "WARCPROX-00001.warc.gz" {
			require.Less(t, recs[len(recs)-2].Offset, int64(20<<10), "%s went on after its rollover size", name)
		}
	}
}

func TestRolloverIdle(t *testing.T) {
	p, dir := newPool(t, Options{RolloverIdle: 50 * time.Millisecond, Prefix: "idle"})
	tr := newTracker()
	hasOpen := func() bool {
		return slices.ContainsFunc(dirNames(t, dir), func(n string) bool { return strings.HasSuffix(n, ".open") })
	}
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/1", bodySize: 100}, tr))
	// The file is closed by the idle timer, not by Close.
	require.Eventually(t, func() bool { return len(dirNames(t, dir)) == 1 && !hasOpen() }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, uint64(1), p.Stats().FilesClosed)
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/2", bodySize: 100}, tr))
	require.Eventually(t, func() bool { return len(dirNames(t, dir)) == 2 && !hasOpen() }, 10*time.Second, 5*time.Millisecond)
	closePool(t, p)
	tr.requireAll(t, 2, nil)
	require.Len(t, checkFiles(t, dir, 2), 2)
}

func TestOpenFileIsLocked(t *testing.T) {
	p, dir := newPool(t, Options{})
	done := make(chan error, 1)
	c := makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 10}, nil)
	c.Done = func(err error) { done <- err }
	enqueueAll(t, p, c)
	require.NoError(t, <-done)
	names := dirNames(t, dir)
	require.Len(t, names, 1)
	require.True(t, strings.HasSuffix(names[0], ".warc.open"), names[0])
	f, err := os.Open(filepath.Join(dir, names[0]))
	require.NoError(t, err)
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	require.ErrorIs(t, err, syscall.EWOULDBLOCK)
	closePool(t, p)
	checkFiles(t, dir, 1)
}

func TestBackPressure(t *testing.T) {
	fsys := newFaultFS()
	fsys.gate = make(chan struct{}) // the worker stalls opening its first file
	p, dir := newPool(t, Options{FS: fsys, Workers: 1, QueueSize: 2})
	tr := newTracker()
	capture := func(i int) *Capture {
		return makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 500, seed: uint64(i)}, tr)
	}
	require.Zero(t, p.FullFor())
	// One capture in the worker's hands, two in the queue.
	enqueueAll(t, p, capture(0))
	require.Eventually(t, func() bool { return p.Stats().QueueLen == 0 }, 10*time.Second, time.Millisecond)
	enqueueAll(t, p, capture(1), capture(2))
	require.Equal(t, 2, p.Stats().QueueLen)

	// The next Enqueue blocks until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := p.Enqueue(ctx, makeCapture(t, captureSpec{uri: "http://example.org/3", bodySize: 500}, nil))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	first := p.FullFor()
	require.Positive(t, first)

	// A blocked Enqueue keeps the queue full, and FullFor grows.
	blocked := make(chan error, 1)
	go func() { blocked <- p.Enqueue(context.Background(), capture(4)) }()
	require.Eventually(t, func() bool { return p.FullFor() > first+20*time.Millisecond }, 10*time.Second, time.Millisecond)
	select {
	case err := <-blocked:
		t.Fatalf("Enqueue returned %v on a full queue", err)
	default:
	}

	close(fsys.gate)
	require.NoError(t, <-blocked)
	closePool(t, p)
	require.Zero(t, p.FullFor())

	tr.requireAll(t, 4, nil)
	files := byFile(warccheck.Dir(t, dir))
	var uris []string
	for _, rs := range files {
		for _, r := range rs {
			if r.Type == "response" {
				uris = append(uris, r.TargetURI)
			}
		}
	}
	require.ElementsMatch(t, []string{"http://example.org/0", "http://example.org/1", "http://example.org/2", "http://example.org/4"}, uris)
}

func TestFullForClearsWhenDrained(t *testing.T) {
	fsys := newFaultFS()
	fsys.gate = make(chan struct{})
	p, _ := newPool(t, Options{FS: fsys, Workers: 1, QueueSize: 1})
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/0", bodySize: 10}, nil))
	require.Eventually(t, func() bool { return p.Stats().QueueLen == 0 }, 10*time.Second, time.Millisecond)
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/1", bodySize: 10}, nil))
	// Full, though nobody waits yet: FullFor starts counting when asked.
	require.Zero(t, p.FullFor())
	require.Eventually(t, func() bool { return p.FullFor() > 0 }, 10*time.Second, time.Millisecond)
	close(fsys.gate)
	require.Eventually(t, func() bool { return p.Stats().QueueLen == 0 }, 10*time.Second, time.Millisecond)
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/2", bodySize: 10}, nil))
	require.Eventually(t, func() bool { return p.FullFor() == 0 }, 10*time.Second, time.Millisecond)
	closePool(t, p)
}

func TestCloseDrains(t *testing.T) {
	fsys := newFaultFS()
	fsys.gate = make(chan struct{})
	p, dir := newPool(t, Options{FS: fsys, Workers: 2, QueueSize: 100, Compression: warcscan.Gzip})
	tr := newTracker()
	const n = 60
	for i := range n {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 2000, seed: uint64(i)}, tr))
	}
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	// Intake stops as soon as Close has begun; what got in before is
	// written like the rest.
	late := 0
	require.Eventually(t, func() bool {
		c := makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/late/%d", late), bodySize: 1}, tr)
		err := p.Enqueue(context.Background(), c)
		if err == nil {
			late++
			return false
		}
		c.Done(nil) // balance the tracker for the refused capture
		tr.mu.Lock()
		delete(tr.done, c.Records[0].TargetURI)
		tr.mu.Unlock()
		return errors.Is(err, ErrClosed)
	}, 10*time.Second, time.Millisecond)
	close(fsys.gate)
	require.NoError(t, <-closed)
	require.NoError(t, p.Close(context.Background()), "second Close")
	tr.requireAll(t, n+late, nil)
	checkFiles(t, dir, n+late)
	s := p.Stats()
	require.Equal(t, uint64(n+late), s.CapturesWritten)
	require.Zero(t, s.FilesOpen)
}

func TestForcedClose(t *testing.T) {
	fsys := newFaultFS()
	fsys.gate = make(chan struct{})
	p, dir := newPool(t, Options{FS: fsys, Workers: 1, QueueSize: 100, Compression: warcscan.Gzip})
	tr := newTracker()
	const n = 30
	for i := range n {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 2000, seed: uint64(i)}, tr))
	}
	// The worker holds capture 0 while it waits to open a file; it gets to
	// open it only after Close's deadline has passed.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	go func() {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond)
		close(fsys.gate)
	}()
	err := p.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, fmt.Sprintf("%d captures dropped", n-1))
	require.NotContains(t, err.Error(), "writer:", "the caller names the component (\"writer: writer: ...\" otherwise)")

	tr.wg.Wait()
	tr.mu.Lock()
	for i := range n {
		errs := tr.done[fmt.Sprintf("http://example.org/%d", i)]
		require.Len(t, errs, 1)
		if i == 0 {
			require.NoError(t, errs[0], "the capture in hand is written")
		} else {
			require.ErrorIs(t, errs[0], ErrClosed)
		}
	}
	tr.mu.Unlock()
	checkFiles(t, dir, 1)
	s := p.Stats()
	require.Equal(t, uint64(n-1), s.CapturesDropped)
	require.Equal(t, uint64(1), s.CapturesWritten)
	require.Zero(t, s.FilesOpen)
}

// TestForcedCloseWhileFailing: a worker retrying a failing disk gives up
// the capture in hand at a forced Close, and the log does not claim that
// it writes again.
func TestForcedCloseWhileFailing(t *testing.T) {
	fsys := newFaultFS()
	fsys.set("open", fault{fail: 1 << 30, err: syscall.ENOSPC})
	o := Options{Dir: t.TempDir(), FS: fsys, Workers: 2, QueueSize: 10, Hostname: "crawler1.example.org"}
	o.backoffMin = 5 * time.Millisecond
	logs := &logBuffer{t: t}
	p, err := New(o, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	dir := o.Dir
	tr := newTracker()
	for i := range 10 {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 10}, tr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = p.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "10 captures dropped")
	require.NotContains(t, logs.String(), "writing warc files again", "the disk never recovered")
	tr.requireAll(t, 10, ErrClosed)
	require.Empty(t, dirNames(t, dir))
	s := p.Stats()
	require.Positive(t, s.WriteErrors)
	require.ErrorIs(t, s.LastWriteError, syscall.ENOSPC)
}

// TestMaxOpenFiles: however many prefixes the crawler names, no more than
// MaxOpenFiles WARC files are open at once; a worker closes its least
// recently written file (renamed, complete) to open one for a new prefix,
// and every capture is written once.
func TestMaxOpenFiles(t *testing.T) {
	fsys := newFaultFS()
	p, dir := newPool(t, Options{FS: fsys, Compression: warcscan.Gzip, Workers: 2, MaxOpenFiles: 4})
	tr := newTracker()
	const n, prefixes = 120, 10
	for i := range n {
		enqueueAll(t, p, makeCapture(t, captureSpec{
			uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 2000, seed: uint64(i),
			prefix: fmt.Sprintf("crawl%d", i%prefixes),
		}, tr))
	}
	closePool(t, p)
	tr.requireAll(t, n, nil)
	files := checkFiles(t, dir, n)
	require.LessOrEqual(t, fsys.maxOpen, 4, "WARC files open at once")
	require.Greater(t, len(files), prefixes, "prefixes took turns, so files were closed to make room")
	require.Equal(t, uint64(len(files)), p.Stats().FilesClosed)
}

// TestWriteErrors injects failures into the file layer: the pool must cut
// back, retry and end with every capture exactly once in valid files.
func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		fault   fault
		errno   syscall.Errno
		codec   warcscan.Codec
		closed  int // files expected, 0 = do not check
		maxOpen int
		dict    bool // a zstd dictionary
	}{
		{"ENOSPC on the first write", "write", fault{skip: 0, fail: 1, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Gzip, 0, 0, false},
		{"ENOSPC mid file", "write", fault{skip: 5, fail: 3, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Gzip, 0, 0, false},
		{"EIO mid file, no gzip", "write", fault{skip: 7, fail: 2, err: syscall.EIO}, syscall.EIO, warcscan.None, 0, 0, false},
		{"ENOSPC mid file, zstd", "write", fault{skip: 5, fail: 3, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Zstd, 0, 0, false},
		{"ENOSPC on the first write, zstd with a dictionary", "write", fault{skip: 0, fail: 2, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Zstd, 0, 0, true},
		{"ENOSPC on create", "open", fault{skip: 1, fail: 3, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Gzip, 0, 0, false},
		{"EIO on sync", "sync", fault{skip: 0, fail: 2, err: syscall.EIO}, syscall.EIO, warcscan.Gzip, 0, 0, false},
		{"EIO on rename", "rename", fault{skip: 1, fail: 1, err: syscall.EIO}, syscall.EIO, warcscan.Gzip, 0, 0, false},
		// One open file per worker: every change of prefix closes one.
		{"ENOSPC while closing a file for another prefix", "write", fault{skip: 4, fail: 2, err: syscall.ENOSPC}, syscall.ENOSPC, warcscan.Gzip, 0, 2, false},
		{"EIO on sync while closing for another prefix", "sync", fault{skip: 3, fail: 1, err: syscall.EIO}, syscall.EIO, warcscan.Gzip, 0, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := newFaultFS()
			fsys.set(tt.op, tt.fault)
			o := Options{FS: fsys, Compression: tt.codec, Workers: 2, QueueSize: 4, RolloverSize: 600 << 10, MaxOpenFiles: tt.maxOpen}
			if tt.dict {
				o.ZstdDictionary = testDict(t)
			}
			o.backoffMin, o.backoffMax = time.Millisecond, 4*time.Millisecond
			p, dir := newPool(t, o)
			tr := newTracker()
			const n = 40
			for i := range n {
				// 100 KB random bodies: the 256 KiB buffers fill, so
				// writes happen in the middle of captures too.
				enqueueAll(t, p, makeCapture(t, captureSpec{
					uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 100 << 10, seed: uint64(i),
					prefix: []string{"a", "b"}[i%2],
				}, tr))
			}
			closePool(t, p)
			tr.requireAll(t, n, nil)
			checkFiles(t, dir, n)
			s := p.Stats()
			require.Equal(t, uint64(n), s.CapturesWritten)
			require.Equal(t, uint64(tt.fault.fail), s.WriteErrors)
			require.ErrorIs(t, s.LastWriteError, tt.errno)
			require.False(t, s.LastWriteErrorAt.IsZero())
			var size int64
			for _, name := range dirNames(t, dir) {
				fi, err := os.Stat(filepath.Join(dir, name))
				require.NoError(t, err)
				size += fi.Size()
			}
			require.Equal(t, uint64(size), s.BytesWritten, "bytes counted = bytes on disk")
		})
	}
}

// errReaderAt fails every read.
type errReaderAt struct{}

func (errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, errors.New("spool gone") }

func TestUnreadableBlock(t *testing.T) {
	for _, c := range []warcscan.Codec{warcscan.None, warcscan.Gzip, warcscan.Zstd} {
		t.Run("compression="+c.Name(), func(t *testing.T) {
			p, dir := newPool(t, Options{Compression: c, Workers: 1})
			tr := newTracker()
			bad := makeCapture(t, captureSpec{uri: "http://example.org/bad", bodySize: 10}, tr)
			bad.Records[1].Block = errReaderAt{}     // fails after the response is written
			bad.Records[1].BlockDigest = "sha1:AAAA" // so it fails in the middle of the record
			short := makeCapture(t, captureSpec{uri: "http://example.org/short", bodySize: 10}, tr)
			short.Records[0].BlockLength += 100 // beyond the end of the block
			short.Records[0].BlockDigest = "sha1:AAAA"
			enqueueAll(t, p,
				makeCapture(t, captureSpec{uri: "http://example.org/0", bodySize: 10}, tr),
				bad, short,
				makeCapture(t, captureSpec{uri: "http://example.org/1", bodySize: 10}, tr))
			closePool(t, p)
			tr.wg.Wait()
			require.Len(t, tr.done, 4)
			require.ErrorContains(t, tr.done["http://example.org/bad"][0], "spool gone")
			require.ErrorIs(t, tr.done["http://example.org/short"][0], io.ErrUnexpectedEOF)
			require.NoError(t, tr.done["http://example.org/0"][0])
			require.NoError(t, tr.done["http://example.org/1"][0])
			checkFiles(t, dir, 2)
			require.Equal(t, uint64(2), p.Stats().CapturesFailed)
		})
	}
}

func TestEnqueueAfterClose(t *testing.T) {
	p, _ := newPool(t, Options{})
	closePool(t, p)
	require.ErrorIs(t, p.Enqueue(context.Background(), makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 1}, nil)), ErrClosed)
}

func TestEnqueueCanceledContext(t *testing.T) {
	p, dir := newPool(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.Enqueue(ctx, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 1}, nil)), context.Canceled)
	closePool(t, p)
	require.Empty(t, dirNames(t, dir))
}

func TestOutputCut(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "x"))
	require.NoError(t, err)
	defer f.Close()
	o := newOutput(f, make([]byte, 8))
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstu", "vw"} {
		_, err := o.Write([]byte(s))
		require.NoError(t, err)
	}
	require.Equal(t, int64(23), o.Size())
	require.NoError(t, o.Cut(20)) // within the buffer
	require.NoError(t, o.Cut(10)) // into the file
	_, err = o.Write([]byte("XY"))
	require.NoError(t, err)
	require.NoError(t, o.Flush())
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Equal(t, "abcdefghijXY", string(b))
	require.True(t, bytes.Equal(b, []byte("abcdefghijXY")))
}

// TestFilesLeftOpen: when a file cannot be finished (cut back after a write
// error, or renamed), it keeps its ".open" name and Close says so; the
// captures that were not acknowledged in it are written elsewhere.
func TestFilesLeftOpen(t *testing.T) {
	tests := []struct {
		name   string
		faults map[string]fault
		errno  syscall.Errno
	}{
		{"truncate fails after a write error", map[string]fault{
			"write":    {skip: 3, fail: 1, err: syscall.ENOSPC},
			"truncate": {fail: 1, err: syscall.EIO},
		}, syscall.EIO},
		{"rename always fails", map[string]fault{
			"rename": {fail: 1 << 30, err: syscall.EACCES},
		}, syscall.EACCES},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := newFaultFS()
			for op, f := range tt.faults {
				fsys.set(op, f)
			}
			o := Options{FS: fsys, Compression: warcscan.Gzip, Workers: 1, QueueSize: 4}
			o.backoffMin, o.backoffMax = time.Millisecond, time.Millisecond
			p, dir := newPool(t, o)
			tr := newTracker()
			const n = 12
			for i := range n {
				enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 100<<10 + 13*i, seed: uint64(i)}, tr))
			}
			err := p.Close(context.Background())
			require.ErrorContains(t, err, "left open-named")
			require.NotContains(t, err.Error(), "writer:", "the caller names the component")
			require.ErrorIs(t, p.Stats().LastWriteError, tt.errno)
			tr.requireAll(t, n, nil)

			var open, closed []string
			for _, name := range dirNames(t, dir) {
				if strings.HasSuffix(name, ".open") {
					open = append(open, name)
					require.ErrorContains(t, err, name)
				} else {
					closed = append(closed, filepath.Join(dir, name))
				}
			}
			require.NotEmpty(t, open)
			if len(closed) > 0 {
				warccheck.Files(t, closed...)
			}
		})
	}
}

func TestFileWithoutCapturesIsRemoved(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 1})
	tr := newTracker()
	bad := makeCapture(t, captureSpec{uri: "http://example.org/bad", bodySize: 10}, tr)
	bad.Records[0].Block = errReaderAt{}
	enqueueAll(t, p, bad)
	closePool(t, p)
	tr.wg.Wait()
	require.ErrorContains(t, tr.done["http://example.org/bad"][0], "spool gone")
	require.Empty(t, dirNames(t, dir))
	s := p.Stats()
	require.Zero(t, s.FilesClosed)
	require.Zero(t, s.FilesOpen)
	require.Zero(t, s.BytesWritten)
}

// stallReader blocks every read until release is closed.
type stallReader struct {
	data    []byte
	release chan struct{}
}

func (s *stallReader) ReadAt(p []byte, off int64) (int, error) {
	<-s.release
	return bytes.NewReader(s.data).ReadAt(p, off)
}

// TestQueueMaxBytes: with QueueMaxBytes, captures wait once the bytes in
// the queue reach it, even with room for more captures; the queue counts
// as full meanwhile, and nothing is lost.
func TestQueueMaxBytes(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Options{Dir: dir, Workers: 1, QueueSize: 100, QueueMaxBytes: 100}, nil)
	require.NoError(t, err)
	stall := &stallReader{data: bytes.Repeat([]byte("a"), 60), release: make(chan struct{})}
	capture := func(i int, block io.ReaderAt) *Capture {
		return &Capture{Records: []Record{{Type: "resource", TargetURI: fmt.Sprintf("urn:test:%d", i), ContentType: "text/plain",
			Block: block, BlockLength: 60}}}
	}
	// The worker takes the first capture and stalls on it: its bytes have
	// left the queue.
	require.NoError(t, p.Enqueue(context.Background(), capture(0, stall)))
	require.Eventually(t, func() bool { return p.Stats().QueueLen == 0 }, 5*time.Second, time.Millisecond)
	plain := bytes.NewReader(stall.data)
	require.NoError(t, p.Enqueue(context.Background(), capture(1, plain)), "60 of 100 bytes")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Enqueue(ctx, capture(2, plain)), context.DeadlineExceeded, "120 bytes would pass 100")

	done := make(chan error, 1)
	go func() { done <- p.Enqueue(context.Background(), capture(3, plain)) }()
	require.Eventually(t, func() bool { return p.FullFor() > 0 }, 5*time.Second, time.Millisecond,
		"waiting on bytes counts as full")
	close(stall.release)
	require.NoError(t, <-done, "room comes back as the worker drains")
	require.NoError(t, p.Close(context.Background()))
	n := 0
	for _, r := range warccheck.Dir(t, dir) {
		if r.Type == "resource" {
			n++
		}
	}
	require.Equal(t, 3, n)
}

func TestCaptureLocationAndSubdirPrefix(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, SubdirPrefix: true, Workers: 1})
	var cs []*Capture
	done := make(chan error, 3)
	for i, prefix := range []string{"", "job-a", "job-a"} {
		c := makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), prefix: prefix, bodySize: 500 + i}, nil)
		c.Done = func(err error) { done <- err }
		cs = append(cs, c)
	}
	enqueueAll(t, p, cs...)
	for range cs {
		require.NoError(t, <-done)
	}
	closePool(t, p)

	require.ElementsMatch(t, []string{DefaultPrefix, "job-a"}, dirNames(t, dir))
	var files []string
	for _, sub := range []string{DefaultPrefix, "job-a"} {
		for _, n := range dirNames(t, filepath.Join(dir, sub)) {
			files = append(files, filepath.Join(dir, sub, n))
		}
	}
	recs := warccheck.Files(t, files...)
	for _, c := range cs {
		require.Equal(t, c.Prefix == "", strings.Contains(c.File, string(filepath.Separator)+DefaultPrefix+string(filepath.Separator)), c.File)
		require.FileExists(t, c.File, "File names the closed file")
		found := false
		for _, r := range recs {
			if r.ID == c.Records[0].ID {
				found = true
				require.Equal(t, filepath.Base(c.File), r.File)
				require.Equal(t, c.Offset, r.Offset, "Offset is where the first record starts")
			}
		}
		require.True(t, found)
	}
}

func TestOnCloseNamesEachClosedFile(t *testing.T) {
	var mu sync.Mutex
	var closed []string
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 1, RolloverSize: 2000, OnClose: func(path string) {
		mu.Lock()
		defer mu.Unlock()
		closed = append(closed, path)
	}})
	for i := range 3 {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 3000}, nil))
	}
	closePool(t, p)
	mu.Lock()
	defer mu.Unlock()
	names := dirNames(t, dir)
	require.Len(t, closed, len(names), "one call per file")
	for _, path := range closed {
		require.FileExists(t, path, "called after the rename")
		require.Contains(t, names, filepath.Base(path))
	}
}
