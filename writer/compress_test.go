package writer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// httpResponse is a response block: a head, then body.
func httpResponse(body []byte) []byte {
	b := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", len(body))
	return append(b, body...)
}

func TestVerdict(t *testing.T) {
	pattern := randomBytes(1<<10, 3)
	skewed := randomBytes(64<<10, 4)
	for i := range skewed {
		skewed[i] %= 200 // ~7.6 bits per byte, no repeats
	}
	for _, tt := range []struct {
		name  string
		block []byte
		want  verdict
	}{
		{"random", httpResponse(randomBytes(256<<10, 1)), storedOnly},
		{"random, smaller than the sample", httpResponse(randomBytes(6<<10, 1)), storedOnly},
		{"random, too small to probe", randomBytes(probeMin-1, 1), fullDeflate},
		{"text", httpResponse(bench.Text(256 << 10)), fullDeflate},
		{"base64 of random bytes", httpResponse([]byte(base64.StdEncoding.EncodeToString(randomBytes(192<<10, 2)))), huffmanOnly},
		{"random bytes from 200 values", httpResponse(skewed), huffmanOnly},
		{"a random KB repeated", httpResponse(bytes.Repeat(pattern, 256)), fullDeflate},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Record{Block: bytes.NewReader(tt.block), BlockLength: int64(len(tt.block))}
			got, err := newProbe().judge(r)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestVerdictReadError(t *testing.T) {
	r := &Record{Block: bytes.NewReader(make([]byte, 100)), BlockLength: 64 << 10}
	_, err := newProbe().judge(r)
	var rerr *readError
	require.ErrorAs(t, err, &rerr)
}

// TestLevelCap: a record never gets a stronger level than the configured
// one, and the cheap levels never replace a cheaper configured one.
func TestLevelCap(t *testing.T) {
	for _, tt := range []struct {
		level                   int
		full, huffman, storedLv int
	}{
		{gzip.DefaultCompression, gzip.DefaultCompression, gzip.HuffmanOnly, gzip.NoCompression},
		{9, 9, gzip.HuffmanOnly, gzip.NoCompression},
		{1, 1, gzip.HuffmanOnly, gzip.NoCompression},
		{gzip.StatelessCompression, gzip.StatelessCompression, gzip.HuffmanOnly, gzip.NoCompression},
		{gzip.HuffmanOnly, gzip.HuffmanOnly, gzip.HuffmanOnly, gzip.NoCompression},
		{gzip.NoCompression, gzip.NoCompression, gzip.NoCompression, gzip.NoCompression},
	} {
		g := newGzipSet(tt.level, new(memberCounts))
		require.Equal(t, tt.full, g.levelFor(fullDeflate), "level %d", tt.level)
		require.Equal(t, tt.huffman, g.levelFor(huffmanOnly), "level %d", tt.level)
		require.Equal(t, tt.storedLv, g.levelFor(storedOnly), "level %d", tt.level)
	}
}

// memFile is a File in memory.
type memFile struct{ data []byte }

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(f.data) {
		f.data = append(f.data, make([]byte, end-len(f.data))...)
	}
	return copy(f.data[off:], p), nil
}
func (f *memFile) Truncate(size int64) error { f.data = f.data[:size]; return nil }
func (f *memFile) Sync() error               { return nil }
func (f *memFile) Close() error              { return nil }

// encoder writes records as one worker does, into memory.
type encoder struct {
	w  *worker
	f  *memFile
	wf *warcFile
}

func newEncoder(level int) *encoder {
	p := &Pool{
		opts: Options{Compression: warcscan.Gzip, GzipLevel: level, WARCVersion: "1.0", Digest: "sha1", Base32: true},
		log:  slog.New(slog.DiscardHandler),
	}
	f := &memFile{}
	return &encoder{w: newWorker(p, 0), f: f, wf: &warcFile{out: newOutput(f, make([]byte, bufSize)), warcinfoID: "<urn:uuid:0>"}}
}

// encode writes one record of block and returns its gzip member and the
// plain record.
func (e *encoder) encode(t testing.TB, block io.ReaderAt, n int64) (member, plain []byte, err error) {
	t.Helper()
	start := e.wf.out.Size()
	r := Record{
		Type: "response", ID: "<urn:uuid:1>", Date: time.Unix(1e9, 0), TargetURI: "http://example.org/",
		ContentType: "application/http; msgtype=response", Block: block, BlockLength: n, BlockDigest: "sha1:X",
	}
	if err := e.w.writeRecord(e.wf, &r); err != nil {
		return nil, nil, err
	}
	require.NoError(t, e.wf.out.Flush())
	plain = appendHeader(nil, header{version: "1.0", warcinfoID: "<urn:uuid:0>"}, &r)
	b := make([]byte, n)
	_, _ = block.ReadAt(b, 0)
	plain = append(append(plain, b...), recordEnd...)
	return e.f.data[start:], plain, nil
}

// oneMember decompresses m, requiring exactly one gzip member.
func oneMember(t testing.TB, m []byte) []byte {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(m))
	zr, err := gzip.NewReader(br)
	require.NoError(t, err)
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	require.NoError(t, err)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "bytes after the first gzip member")
	return out
}

func gzipLevel(t testing.TB, level int, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	require.NoError(t, err)
	_, _ = zw.Write(p)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestCompressionPerRecord: a random block is stored, about its own size;
// base64 is Huffman-coded;
// a text block gets the configured level, as it did before the choice;
// both as one member that gives back the record.
func TestCompressionPerRecord(t *testing.T) {
	for _, level := range []int{gzip.DefaultCompression, 1, 9} {
		t.Run(fmt.Sprintf("level=%d", level), func(t *testing.T) {
			e := newEncoder(level)
			random := httpResponse(randomBytes(256<<10, 1))
			m, plain, err := e.encode(t, bytes.NewReader(random), int64(len(random)))
			require.NoError(t, err)
			require.Equal(t, plain, oneMember(t, m))
			require.InDelta(t, len(plain), len(m), float64(len(plain))/100, "a random record is stored")

			b64 := httpResponse([]byte(base64.StdEncoding.EncodeToString(randomBytes(192<<10, 2))))
			m, plain, err = e.encode(t, bytes.NewReader(b64), int64(len(b64)))
			require.NoError(t, err)
			require.Equal(t, plain, oneMember(t, m))
			require.Less(t, len(m), len(plain)*8/10, "base64 is Huffman-coded: 6 bits a byte")

			text := httpResponse(bench.Text(256 << 10))
			m, plain, err = e.encode(t, bytes.NewReader(text), int64(len(text)))
			require.NoError(t, err)
			require.Equal(t, plain, oneMember(t, m))
			require.Equal(t, gzipLevel(t, level, plain), m, "a text record at the configured level")
		})
	}
}

// TestHugeRecordParallel: a huge compressible block is compressed by
// several goroutines into one member that gives back the record, about as
// small as one stream would be.
func TestHugeRecordParallel(t *testing.T) {
	e := newEncoder(gzip.DefaultCompression)
	text := httpResponse(bench.Text(parallelMin + 3<<20 + 17))
	m, plain, err := e.encode(t, bytes.NewReader(text), int64(len(text)))
	require.NoError(t, err)
	require.NotNil(t, e.w.gz.par, "written by the parallel writer")
	require.Equal(t, plain, oneMember(t, m))
	require.InEpsilon(t, len(gzipLevel(t, gzip.DefaultCompression, plain)), len(m), 0.03)

	// A random one as large is stored, not compressed in parallel.
	e = newEncoder(gzip.DefaultCompression)
	random := httpResponse(randomBytes(parallelMin+1, 5))
	m, plain, err = e.encode(t, bytes.NewReader(random), int64(len(random)))
	require.NoError(t, err)
	require.Nil(t, e.w.gz.par)
	require.Equal(t, plain, oneMember(t, m))
}

// failingAt is a block that cannot be read past at.
type failingAt struct {
	b  []byte
	at int64
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.at {
		return 0, errors.New("disk gone")
	}
	return copy(p, f.b[off:]), nil
}

// TestHugeRecordReadError: a parallel member that fails half-way leaves no
// goroutine writing, and the next record is written whole.
func TestHugeRecordReadError(t *testing.T) {
	m, plain := failThenWhole(t, newEncoder(gzip.DefaultCompression))
	require.Equal(t, plain, oneMember(t, m))
}

// failThenWhole writes a huge text record through e whose block fails to
// read half-way (the file is then cut back, as the worker does), then the
// same record whole; it returns what the second write put in the file and
// the record's bytes.
func failThenWhole(t *testing.T, e *encoder) (written, plain []byte) {
	text := httpResponse(bench.Text(parallelMin + 4<<20))
	_, _, err := e.encode(t, failingAt{text, parallelMin + 2<<20}, int64(len(text)))
	var rerr *readError
	require.ErrorAs(t, err, &rerr)
	require.NoError(t, e.wf.out.Cut(0))
	e.f.data = e.f.data[:0]

	written, plain, err = e.encode(t, bytes.NewReader(text), int64(len(text)))
	require.NoError(t, err)
	return written, plain
}

// TestHugeRecordReaders: the shared WARC checks (gowarc, warcio.js) read
// a file holding a parallel member, a stored one and a Huffman-only one
// among ordinary ones.
func TestHugeRecordReaders(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 1})
	tr := newTracker()
	for i, s := range []captureSpec{
		{bodySize: 16 << 10, compressible: true},
		{bodySize: parallelMin + 1<<20, compressible: true},
		{bodySize: 300 << 10},
	} {
		s.uri, s.seed = fmt.Sprintf("http://example.org/%d", i), uint64(i)
		require.NoError(t, p.Enqueue(context.Background(), makeCapture(t, s, tr)))
	}
	b64 := []byte(base64.StdEncoding.EncodeToString(randomBytes(48<<10, 3)))
	resp := httpResponse(b64)
	require.NoError(t, p.Enqueue(context.Background(), &Capture{Records: []Record{{
		Type: "response", TargetURI: "http://example.org/b64", ContentType: "application/http; msgtype=response",
		Fields: []Field{{"WARC-Payload-Digest", sha1b32(b64)}},
		Block:  bytes.NewReader(resp), BlockLength: int64(len(resp)),
	}}, Done: tr.doneFunc("http://example.org/b64")}))
	require.NoError(t, p.Close(context.Background()))
	tr.requireAll(t, 4, nil)
	require.Equal(t, uint64(1), p.stats.members[huffmanOnly].Load())
	require.Equal(t, uint64(1), p.stats.members[storedOnly].Load())
	require.Equal(t, uint64(1), p.stats.members[parallelKind].Load())
	files, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	warccheck.Files(t, files...)
	for _, r := range rawRecords(t, files[0]) {
		require.Equal(t, 1, r.members)
	}
}

// TestCompressionAllocs: once a worker has its writers, choosing and
// compressing a record allocates nothing.
func TestCompressionAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -cover and -race")
	}
	e := newEncoder(gzip.DefaultCompression)
	blocks := [][]byte{
		httpResponse(randomBytes(256<<10, 1)),
		httpResponse(bench.Text(256 << 10)),
		httpResponse([]byte(base64.StdEncoding.EncodeToString(randomBytes(96<<10, 2)))),
	}
	require.Zero(t, allocsWriting(t, e, blocks))
}

// allocsWriting is the allocations of writing one response record per
// block through e, once e has written them all once.
func allocsWriting(t *testing.T, e *encoder, blocks [][]byte) float64 {
	recs := make([]Record, len(blocks))
	for i, b := range blocks {
		recs[i] = Record{Type: "response", ID: "<urn:uuid:1>", Date: time.Unix(1e9, 0), Block: bytes.NewReader(b),
			BlockLength: int64(len(b)), BlockDigest: "sha1:X"}
	}
	write := func() {
		for i := range recs {
			require.NoError(t, e.w.writeRecord(e.wf, &recs[i]))
		}
		require.NoError(t, e.wf.out.Cut(0))
	}
	write()
	return testing.AllocsPerRun(5, write)
}

// TestMemberCounts: the metric counts members by how they were compressed.
func TestMemberCounts(t *testing.T) {
	e := newEncoder(gzip.DefaultCompression)
	for _, b := range [][]byte{httpResponse(randomBytes(64<<10, 1)), httpResponse(bench.Text(64 << 10)), httpResponse(bench.Text(parallelMin))} {
		_, _, err := e.encode(t, bytes.NewReader(b), int64(len(b)))
		require.NoError(t, err)
	}
	c := &e.w.p.stats.members
	require.Equal(t, []uint64{1, 0, 1, 1}, []uint64{c[0].Load(), c[1].Load(), c[2].Load(), c[3].Load()}, "%v", memberKinds)
}
