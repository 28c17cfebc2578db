package writer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// testLogger logs through t.Log, so a failing test shows what the pool said.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "writer")
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newPool starts a pool writing into a fresh directory and closes it when
// the test ends (if the test did not).
func newPool(t testing.TB, o Options) (*Pool, string) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.Hostname == "" {
		o.Hostname = "crawler1.example.org"
	}
	p, err := New(o, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p, o.Dir
}

// tracker records the Done calls of the captures it made.
type tracker struct {
	mu   sync.Mutex
	wg   sync.WaitGroup
	done map[string][]error // by target URI: one entry per Done call
}

func newTracker() *tracker { return &tracker{done: make(map[string][]error)} }

func (tr *tracker) doneFunc(uri string) func(error) {
	tr.wg.Add(1)
	return func(err error) {
		tr.mu.Lock()
		tr.done[uri] = append(tr.done[uri], err)
		tr.mu.Unlock()
		tr.wg.Done()
	}
}

// requireAll checks that every capture was acknowledged exactly once
// with want (nil or an error matched by errors.Is via require.ErrorIs).
func (tr *tracker) requireAll(t testing.TB, n int, want error) {
	t.Helper()
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.Len(t, tr.done, n)
	for uri, errs := range tr.done {
		require.Len(t, errs, 1, "Done calls for %s", uri)
		if want == nil {
			require.NoError(t, errs[0], uri)
		} else {
			require.ErrorIs(t, errs[0], want, uri)
		}
	}
}

// captureSpec describes a test capture.
type captureSpec struct {
	uri          string
	prefix       string
	bodySize     int
	compressible bool
	seed         uint64
	giveDigest   bool // set BlockDigest (else the pool computes it)
	giveIDs      bool // set both record ids (else only the response's)
}

// body returns deterministic test content: text-like (compresses about
// 4-5x) or random bytes.
func body(size int, compressible bool, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, size)
	if !compressible {
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	words := []string{"the", "archive", "of", "web", "pages", "crawler", "record", "<div>", "</p>", "response", "and", "proxy", "WARC", "link", "href=\"/a\"", "\n"}
	i := 0
	for i < size {
		w := words[r.IntN(len(words))]
		i += copy(b[i:], w)
		if i < size {
			b[i] = ' '
			i++
		}
	}
	return b
}

func sha1b32(p []byte) string {
	s := sha1.Sum(p)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// makeCapture builds a response and a request record for s. The response
// block sits at an offset inside a larger buffer, to exercise BlockOffset.
func makeCapture(t testing.TB, s captureSpec, tr *tracker) *Capture {
	t.Helper()
	b := body(s.bodySize, s.compressible, s.seed)
	resp := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(b))
	resp = append(resp, b...)
	buf := append(append([]byte("junk-before"), resp...), "junk-after"...)
	req := fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: example.org\r\nUser-Agent: test\r\n\r\n", s.uri)
	respID, err := newRecordID()
	require.NoError(t, err)
	c := &Capture{
		Prefix: s.prefix,
		Records: []Record{{
			Type:        "response",
			ID:          respID,
			Date:        time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
			TargetURI:   s.uri,
			ContentType: "application/http; msgtype=response",
			Fields: []Field{
				{"WARC-IP-Address", "192.0.2.7"},
				{"WARC-Payload-Digest", sha1b32(b)},
			},
			Block:       bytes.NewReader(buf),
			BlockOffset: int64(len("junk-before")),
			BlockLength: int64(len(resp)),
		}, {
			Type:        "request",
			TargetURI:   s.uri,
			ContentType: "application/http; msgtype=request",
			Fields:      []Field{{"WARC-Concurrent-To", respID}},
			Block:       bytes.NewReader(req),
			BlockLength: int64(len(req)),
		}},
	}
	if s.giveDigest {
		c.Records[0].BlockDigest = sha1b32(resp)
		c.Records[1].BlockDigest = sha1b32(req)
	}
	if s.giveIDs {
		c.Records[1].ID, err = newRecordID()
		require.NoError(t, err)
	}
	if tr != nil {
		c.Done = tr.doneFunc(s.uri)
	}
	return c
}

// dirNames lists the names of the files in dir.
func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// rawRecord is a record header as it is laid out in a file.
type rawRecord struct {
	version string   // first line
	names   []string // field names in order
	fields  map[string]string
	members int // gzip members the record spans (1 in a good .gz file)
}

// rawRecords parses a WARC file by hand, to check what the shared readers
// do not: the order of header lines and the line endings.
func rawRecords(t testing.TB, path string) []rawRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var plain []byte
	switch {
	case strings.HasSuffix(path, ".zst"):
		// warccheck checks the frames; this is about the bytes in them.
		plain, err = io.ReadAll(warcscan.NewReader(bytes.NewReader(data), warcscan.Zstd))
		require.NoError(t, err)
	case strings.HasSuffix(path, ".gz"):
		br := bufio.NewReader(bytes.NewReader(data))
		for {
			zr, err := gzip.NewReader(br)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			zr.Multistream(false)
			m, err := io.ReadAll(zr)
			require.NoError(t, err)
			plain = append(plain, m...)
			plain = append(plain, 0) // member boundary marker, checked below
		}
	default:
		plain = data
	}
	var recs []rawRecord
	gz := strings.HasSuffix(path, ".gz")
	for len(plain) > 0 {
		end := bytes.Index(plain, []byte("\r\n\r\n"))
		require.GreaterOrEqual(t, end, 0, "no end of header in %s", path)
		lines := strings.Split(string(plain[:end]), "\r\n")
		r := rawRecord{version: lines[0], fields: make(map[string]string)}
		for _, l := range lines[1:] {
			require.NotContains(t, l, "\n", "bare LF in header line of %s", path)
			name, value, ok := strings.Cut(l, ": ")
			require.True(t, ok, "bad header line %q in %s", l, path)
			r.names = append(r.names, name)
			r.fields[name] = value
		}
		n, err := strconv.Atoi(r.fields["Content-Length"])
		require.NoError(t, err)
		rest := plain[end+4+n:]
		require.True(t, bytes.HasPrefix(rest, []byte("\r\n\r\n")), "record in %s not ended by CRLFCRLF", path)
		rest = rest[4:]
		if gz {
			require.True(t, len(rest) > 0 && rest[0] == 0, "record in %s does not end its gzip member", path)
			rest = rest[1:]
			r.members = 1
		}
		recs = append(recs, r)
		plain = rest
	}
	return recs
}

// faultFS wraps the OS file layer and fails chosen operations.
type faultFS struct {
	OSFS
	mu     sync.Mutex
	faults map[string]*fault // by op: open, write, sync, truncate, rename
	calls  map[string]int
	// gate, if set, holds every OpenFile until it is closed.
	gate chan struct{}
	// open and maxOpen count the files open now and at most.
	open, maxOpen int
}

// fault makes calls of an op fail: after skip successful calls, the next
// fail calls return err (a write writes half its bytes first).
type fault struct {
	skip, fail int
	err        error
}

func newFaultFS() *faultFS {
	return &faultFS{faults: make(map[string]*fault), calls: make(map[string]int)}
}

func (f *faultFS) set(op string, ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = &ft
}

func (f *faultFS) check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	ft := f.faults[op]
	switch {
	case ft == nil:
		return nil
	case ft.skip > 0:
		ft.skip--
		return nil
	case ft.fail > 0:
		ft.fail--
		return ft.err
	}
	return nil
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if f.gate != nil {
		<-f.gate
	}
	if err := f.check("open"); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.open++
	f.maxOpen = max(f.maxOpen, f.open)
	f.mu.Unlock()
	return &faultFile{File: file, fs: f}, nil
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	if err := f.check("rename"); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return os.Rename(oldpath, newpath)
}

// faultFile embeds *os.File, so the pool can still flock it.
type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("write"); err != nil {
		// A partial write, just past the middle: half would end exactly
		// between two captures of equal size, which needs no cutting back.
		n, _ := f.File.WriteAt(p[:min(len(p), len(p)/2+1)], off)
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Close() error {
	f.fs.mu.Lock()
	f.fs.open--
	f.fs.mu.Unlock()
	return f.File.Close()
}

func (f *faultFile) Sync() error {
	if err := f.fs.check("sync"); err != nil {
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check("truncate"); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	return f.File.Truncate(size)
}

var (
	_ FS   = (*faultFS)(nil)
	_ File = (*faultFile)(nil)
)

var (
	dictOnce sync.Once
	dict     []byte
)

// testDict is a zstd dictionary trained by `zstd --train` on captures like
// the ones the tests write, as an operator would train one.
func testDict(t testing.TB) []byte {
	t.Helper()
	zstdcli.Path(t)
	dictOnce.Do(func() {
		var samples [][]byte
		for i := range 100 {
			c := makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/page/%d", i), bodySize: 300, compressible: true, seed: uint64(i)}, nil)
			for _, r := range c.Records {
				b := make([]byte, r.BlockLength)
				_, _ = r.Block.ReadAt(b, r.BlockOffset)
				samples = append(samples, appendHeader(nil, header{version: "1.0", warcinfoID: "<urn:uuid:0>"}, &r), b)
			}
		}
		dict = zstdcli.Train(t, samples, 4096)
	})
	require.NotEmpty(t, dict)
	return dict
}
