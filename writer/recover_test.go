package writer

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// sample is a WARC file written by a Pool, with the end offset of each of
// its records (of each gzip member or zstd frame in a .gz or .zst file).
type sample struct {
	name string // final name, e.g. WARCPROX-...-00000-abcdefgh.warc.gz
	data []byte
	ends []int64 // ends[0] is the end of the warcinfo record (after a zstd dictionary frame)
}

// writeSample writes captures with the given body sizes into one file and
// returns it. A large body is incompressible, so that a gzip member is long.
func writeSample(t testing.TB, gz bool, uri string, bodySizes ...int) sample {
	t.Helper()
	return writeSampleWith(t, Options{Compression: codecOf(gz)}, uri, bodySizes...)
}

// writeSampleWith is writeSample with the compression options of o.
func writeSampleWith(t testing.TB, o Options, uri string, bodySizes ...int) sample {
	t.Helper()
	o.Workers = 1
	p, dir := newPool(t, o)
	tr := newTracker()
	for i, size := range bodySizes {
		u := fmt.Sprintf("%s%d", uri, i)
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: u, bodySize: size, compressible: size < 4096, seed: uint64(i)}, tr))
	}
	closePool(t, p)
	tr.requireAll(t, len(bodySizes), nil)
	names := dirNames(t, dir)
	require.Len(t, names, 1)
	path := filepath.Join(dir, names[0])
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	recs := warccheck.Files(t, path)
	require.Len(t, recs, 1+2*len(bodySizes))
	s := sample{name: names[0], data: data}
	for _, r := range recs[1:] {
		s.ends = append(s.ends, r.Offset)
	}
	s.ends = append(s.ends, int64(len(data)))
	return s
}

// record returns the bytes of record i.
func (s sample) record(i int) []byte {
	start := int64(0)
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.data[start:s.ends[i]]
}

// gzipped compresses p as one gzip member.
func gzipped(t testing.TB, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(p)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// recoverOne writes data as name+".open" into dir, runs Recover on dir and
// checks what it reports for that one file: kept whole records, or the file
// removed when records is 0. It returns the recovered file's path ("" if
// removed).
func recoverOne(t *testing.T, dir, name string, data []byte, records int, kept int64) string {
	t.Helper()
	open := filepath.Join(dir, name+openSuffix)
	require.NoError(t, os.WriteFile(open, data, 0o644))
	rep, err := Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Found)
	require.Zero(t, rep.Failed)
	require.Zero(t, rep.Skipped)
	require.Len(t, rep.Files, 1)
	f := rep.Files[0]
	require.Equal(t, open, f.Path)
	require.EqualValues(t, records, f.Records)
	require.EqualValues(t, records, rep.Records)
	require.NoFileExists(t, open)
	if records == 0 {
		require.Equal(t, 1, rep.Removed)
		require.Empty(t, f.NewPath)
		require.EqualValues(t, len(data), rep.BytesCut)
		return ""
	}
	require.Equal(t, 1, rep.Recovered)
	require.Equal(t, kept, f.Size)
	require.EqualValues(t, int64(len(data))-kept, f.Cut)
	require.Equal(t, f.Cut, rep.BytesCut)
	got, err := os.ReadFile(f.NewPath)
	require.NoError(t, err)
	require.Equal(t, data[:kept], got, "the file is cut, never changed")
	return f.NewPath
}

// TestRecoverCutPoints: a crash leaves a file cut anywhere, or with junk
// after its last record; recovery keeps exactly the whole records before
// that point, and what it keeps verifies in both WARC readers.
func TestRecoverCutPoints(t *testing.T) {
	gz := writeSample(t, true, "http://example.org/gz/", 300, 70_000, 2_000)
	plain := writeSample(t, false, "http://example.org/plain/", 300, 70_000, 2_000)
	// Records: 0 warcinfo, 1-2 small capture, 3-4 large one, 5-6 small.
	require.Len(t, gz.ends, 7)
	mid := func(a, b int64) int64 { return a + (b-a)/2 }
	headerEnd := func(rec []byte) int64 { return int64(bytes.Index(rec, []byte("\r\n\r\n")) + 4) }
	resp := plain.record(3) // the large response record
	// A .gz file can also hold whole gzip members around broken records.
	afterInfo := func(members ...[]byte) []byte { return cat(append([][]byte{gz.data[:gz.ends[0]]}, members...)...) }

	tests := []struct {
		name    string
		gz      bool
		data    []byte
		records int   // whole records kept; 0: the file is removed
		kept    int64 // bytes kept
	}{
		{"gz/empty file", true, nil, 0, 0},
		{"gz/mid warcinfo member", true, gz.data[:gz.ends[0]/2], 0, 0},
		{"gz/warcinfo only", true, gz.data[:gz.ends[0]], 1, gz.ends[0]},
		{"gz/between members", true, gz.data[:gz.ends[2]], 3, gz.ends[2]},
		{"gz/mid gzip member", true, gz.data[:mid(gz.ends[2], gz.ends[3])], 3, gz.ends[2]},
		{"gz/gzip header only", true, gz.data[:gz.ends[2]+10], 3, gz.ends[2]},
		{"gz/member without its last trailer byte", true, gz.data[:gz.ends[3]-1], 3, gz.ends[2]},
		{"gz/whole file", true, gz.data, 7, gz.ends[6]},
		{"gz/garbage appended", true, cat(gz.data, []byte("garbage\r\n")), 7, gz.ends[6]},
		{"gz/zeros appended", true, cat(gz.data, make([]byte, 4096)), 7, gz.ends[6]},
		{"gz/gzip member of non-WARC data appended", true, cat(gz.data, gzipped(t, []byte("hello"))), 7, gz.ends[6]},
		{"gz/bad CRC in last member", true, cat(gz.data[:gz.ends[6]-8], []byte{1, 2, 3, 4}, gz.data[gz.ends[6]-4:]), 6, gz.ends[5]},
		{"gz/member with a record cut mid header", true, afterInfo(gzipped(t, resp[:headerEnd(resp)/2])), 1, gz.ends[0]},
		{"gz/member with a record cut mid block", true, afterInfo(gzipped(t, resp[:len(resp)/2])), 1, gz.ends[0]},
		{"gz/member with a record missing its end", true, afterInfo(gzipped(t, resp[:len(resp)-2])), 1, gz.ends[0]},
		{"gz/member with two records", true, afterInfo(gzipped(t, cat(plain.record(1), plain.record(2)))), 1, gz.ends[0]},
		{"gz/member with bytes after its record", true, afterInfo(gzipped(t, cat(plain.record(1), []byte("x")))), 1, gz.ends[0]},
		{"gz/records made here are whole", true, afterInfo(gzipped(t, plain.record(1)), gzipped(t, plain.record(2))),
			3, gz.ends[0] + int64(len(gzipped(t, plain.record(1)))+len(gzipped(t, plain.record(2))))},

		{"warc/empty file", false, nil, 0, 0},
		{"warc/mid warcinfo header", false, plain.data[:10], 0, 0},
		{"warc/warcinfo only", false, plain.data[:plain.ends[0]], 1, plain.ends[0]},
		{"warc/between records", false, plain.data[:plain.ends[2]], 3, plain.ends[2]},
		{"warc/mid header", false, plain.data[:plain.ends[2]+headerEnd(resp)/2], 3, plain.ends[2]},
		{"warc/header without its blank line", false, plain.data[:plain.ends[2]+headerEnd(resp)-2], 3, plain.ends[2]},
		{"warc/header only", false, plain.data[:plain.ends[2]+headerEnd(resp)], 3, plain.ends[2]},
		{"warc/mid block", false, plain.data[:mid(plain.ends[2], plain.ends[3])], 3, plain.ends[2]},
		{"warc/block without its CRLF CRLF", false, plain.data[:plain.ends[3]-4], 3, plain.ends[2]},
		{"warc/block with half its CRLF CRLF", false, plain.data[:plain.ends[3]-2], 3, plain.ends[2]},
		{"warc/whole file", false, plain.data, 7, plain.ends[6]},
		{"warc/garbage appended", false, cat(plain.data, []byte("garbage")), 7, plain.ends[6]},
		{"warc/zeros appended", false, cat(plain.data, make([]byte, 4096)), 7, plain.ends[6]},
		{"warc/header with bare LF line endings", false,
			cat(plain.data[:plain.ends[0]], bytes.ReplaceAll(plain.record(1), []byte("\r\n"), []byte("\n"))), 1, plain.ends[0]},
		{"warc/wrong Content-Length", false,
			cat(plain.data[:plain.ends[0]], bytes.Replace(plain.record(1), []byte("Content-Length: "), []byte("Content-Length: 1"), 1)), 1, plain.ends[0]},
		{"warc/two Content-Length fields", false,
			cat(plain.data[:plain.ends[0]], bytes.Replace(plain.record(1), []byte("Content-Length: "), []byte("Content-Length: 0\r\nContent-Length: "), 1)), 1, plain.ends[0]},
		{"warc/no WARC-Record-ID", false,
			cat(plain.data[:plain.ends[0]], bytes.Replace(plain.record(1), []byte("WARC-Record-ID:"), []byte("WARC-Record-Id-X:"), 1)), 1, plain.ends[0]},
		{"warc/version 2.0", false,
			cat(plain.data[:plain.ends[0]], bytes.Replace(plain.record(1), []byte("WARC/1.0"), []byte("WARC/2.0"), 1)), 1, plain.ends[0]},
	}
	root := t.TempDir()
	var kept []string
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprint(i))
			require.NoError(t, os.Mkdir(dir, 0o755))
			name := gz.name
			if !tt.gz {
				name = plain.name
			}
			if p := recoverOne(t, dir, name, tt.data, tt.records, tt.kept); p != "" {
				require.Equal(t, filepath.Join(dir, name), p)
				kept = append(kept, p)
			}
		})
	}
	// Both readers, digests included, on every file recovery kept.
	recs := warccheck.Files(t, kept...)
	require.NotEmpty(t, recs)
}

// TestRecoverEveryCut cuts a file at every byte: the scan keeps the records
// that end at or before the cut and nothing else.
func TestRecoverEveryCut(t *testing.T) {
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := writeSample(t, gz, "http://example.org/", 10, 200)
			for cut := range int64(len(s.data)) + 1 {
				end, records, stop, err := scanWARC(bytes.NewReader(s.data[:cut]), gz)
				require.NoError(t, err)
				var wantEnd, wantRecords int64
				for _, e := range s.ends {
					if e <= cut {
						wantEnd, wantRecords = e, wantRecords+1
					}
				}
				require.Equal(t, wantEnd, end, "cut at %d", cut)
				require.Equal(t, wantRecords, records, "cut at %d", cut)
				require.Equal(t, cut == wantEnd, stop == nil, "cut at %d: %v", cut, stop)
			}
		})
	}
}

// TestRecoverLongHeaderLine: a header line far longer than the scanner's
// buffers (a URI of 600 KB) is streamed, not refused.
func TestRecoverLongHeaderLine(t *testing.T) {
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			uri := "http://example.org/" + strings.Repeat("a", 600<<10) + "/"
			s := writeSample(t, gz, uri, 100)
			dir := t.TempDir()
			recoverOne(t, dir, s.name, s.data, 3, s.ends[2])
			// Cut inside the long line of the request record.
			cut := s.ends[1] + 300<<10
			if gz {
				cut = s.ends[1] + (s.ends[2]-s.ends[1])/2
			}
			require.NoError(t, os.Remove(filepath.Join(dir, s.name)))
			recoverOne(t, dir, s.name, s.data[:cut], 2, s.ends[1])
		})
	}
}

// TestRecoverReadError: a read error is not the end of the data: the scan
// fails, so that a file on a failing disk is never cut.
func TestRecoverReadError(t *testing.T) {
	for _, gz := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			s := writeSample(t, gz, "http://example.org/", 100, 5000)
			for _, at := range []int64{0, s.ends[0], s.ends[1] + 7, s.ends[4] - 1} {
				_, _, _, err := scanWARC(io.MultiReader(bytes.NewReader(s.data[:at]), iotest.ErrReader(syscall.EIO)), gz)
				require.ErrorIs(t, err, syscall.EIO, "error at %d", at)
			}
		})
	}
}

// TestRecoverLockedFileLeftAlone: a file whose flock someone holds, as a
// live writer does, is neither read nor renamed; once the lock is gone the
// file is recovered.
func TestRecoverLockedFileLeftAlone(t *testing.T) {
	s := writeSample(t, true, "http://example.org/", 100, 5000)
	dir := t.TempDir()
	open := filepath.Join(dir, s.name+openSuffix)
	cut := s.data[:s.ends[2]+5] // as a writer that is mid-record
	require.NoError(t, os.WriteFile(open, cut, 0o644))
	f, err := os.OpenFile(open, os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, lockFile(f))

	var logs bytes.Buffer
	rep, err := Recover(dir, slog.New(slog.NewTextHandler(&logs, nil)), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, RecoverReport{Found: 1, Skipped: 1}, rep)
	got, err := os.ReadFile(open)
	require.NoError(t, err)
	require.Equal(t, cut, got)
	require.Contains(t, logs.String(), "level=INFO msg=\"crash recovery: warc file left alone, a live process holds its lock\" file="+open)

	require.NoError(t, f.Close())
	recoverOne(t, dir, s.name, cut, 3, s.ends[2])
}

// TestRecoverLivePool: recovery run by a second process while a pool writes
// into the directory leaves the pool's files alone.
func TestRecoverLivePool(t *testing.T) {
	p, dir := newPool(t, Options{Compression: warcscan.Gzip, Workers: 2})
	tr := newTracker()
	for i := range 10 {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 1000}, tr))
	}
	tr.wg.Wait()
	before := dirNames(t, dir)
	require.NotEmpty(t, before)
	rep, err := Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, len(before), rep.Found)
	require.Equal(t, len(before), rep.Skipped)
	require.Equal(t, before, dirNames(t, dir))
	// The pool goes on in its files.
	for i := 10; i < 20; i++ {
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 1000}, tr))
	}
	closePool(t, p)
	tr.requireAll(t, 20, nil)
	checkFiles(t, dir, 20)
}

// TestRecoverNameCollision: a recovered file never replaces another.
func TestRecoverNameCollision(t *testing.T) {
	s := writeSample(t, true, "http://example.org/", 100)
	stem := strings.TrimSuffix(s.name, ".warc.gz")
	dir := t.TempDir()
	other := []byte("another file")
	require.NoError(t, os.WriteFile(filepath.Join(dir, s.name), other, 0o644))
	p := recoverOne(t, dir, s.name, s.data, 3, int64(len(s.data)))
	require.Equal(t, filepath.Join(dir, stem+"-recovered-1.warc.gz"), p)
	p = recoverOne(t, dir, s.name, s.data, 3, int64(len(s.data)))
	require.Equal(t, filepath.Join(dir, stem+"-recovered-2.warc.gz"), p)
	got, err := os.ReadFile(filepath.Join(dir, s.name))
	require.NoError(t, err)
	require.Equal(t, other, got)
	warccheck.Files(t, filepath.Join(dir, stem+"-recovered-1.warc.gz"), filepath.Join(dir, stem+"-recovered-2.warc.gz"))

	// A recovery that stopped after linking the final name leaves two
	// names on one file: the open one is dropped, no copy is made.
	dir = t.TempDir()
	final := filepath.Join(dir, s.name)
	require.NoError(t, os.WriteFile(final, s.data, 0o644))
	require.NoError(t, os.Link(final, final+openSuffix))
	rep, err := Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Recovered)
	require.Equal(t, final, rep.Files[0].NewPath)
	require.Equal(t, []string{s.name}, dirNames(t, dir))
}

// TestRecoverDirectories: open files in dir and in its immediate
// subdirectories (--subdir-prefix) are recovered; deeper ones, closed WARC
// files and other open files are not touched.
func TestRecoverDirectories(t *testing.T) {
	gz := writeSample(t, true, "http://example.org/", 100)
	plain := writeSample(t, false, "http://example.org/", 100)
	dir := t.TempDir()
	put := func(rel string, data []byte) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	put("top.warc.gz.open", gz.data[:gz.ends[1]+3])
	put("job-a/sub.warc.gz.open", gz.data)
	put("job-b/sub.warc.open", plain.data[:plain.ends[2]-1])
	untouched := []string{
		put("job-a/deeper/deep.warc.gz.open", gz.data[:5]),
		put("closed.warc.gz", gz.data[:5]),
		put("crawl.log.open", []byte("x")),
		put("job-a/notes.warc.gz.opened", []byte("x")),
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, "job-a"), filepath.Join(dir, "link-to-job-a")))

	rep, err := Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, 3, rep.Found)
	require.Equal(t, 3, rep.Recovered)
	require.EqualValues(t, 2+3+2, rep.Records)
	require.EqualValues(t, 3+(plain.ends[2]-1-plain.ends[1]), rep.BytesCut)
	var got []string
	for _, f := range rep.Files {
		got = append(got, f.NewPath)
	}
	want := []string{filepath.Join(dir, "top.warc.gz"), filepath.Join(dir, "job-a/sub.warc.gz"), filepath.Join(dir, "job-b/sub.warc")}
	require.ElementsMatch(t, want, got)
	for _, p := range untouched {
		require.FileExists(t, p)
	}
	slices.Sort(got)
	warccheck.Files(t, got...)

	rep, err = Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, RecoverReport{}, rep, "nothing left to do")
	rep, err = Recover(filepath.Join(dir, "missing"), testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, RecoverReport{}, rep)
}

// TestRecoverLogs: every file is logged with what was kept and cut.
func TestRecoverLogs(t *testing.T) {
	s := writeSample(t, true, "http://example.org/", 100)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.warc.gz.open"), s.data[:s.ends[1]+4], 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.warc.gz.open"), s.data[:4], 0o644))
	var logs bytes.Buffer
	_, err := Recover(dir, slog.New(slog.NewTextHandler(&logs, nil)), RecoverOptions{})
	require.NoError(t, err)
	out := logs.String()
	require.Contains(t, out, fmt.Sprintf(`level=WARN msg="crash recovery: recovered warc file" file=%s renamed_to=a.warc.gz records=2 bytes_kept=%d bytes_cut=4 reason=`,
		filepath.Join(dir, "a.warc.gz.open"), s.ends[1]))
	require.Contains(t, out, fmt.Sprintf(`level=WARN msg="crash recovery: removed warc file without a whole record" file=%s bytes_cut=4 reason=`,
		filepath.Join(dir, "b.warc.gz.open")))
	require.Contains(t, out, `level=INFO msg="crash recovery finished" dir=`+dir+` found=2 whole=0 recovered=1 removed=1 skipped=0 failed=0 records=2 bytes_cut=8`)
}

// TestRecoverUnreadableFile: a file that cannot be opened is reported and
// left as it is.
func TestRecoverUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens any file")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "a.warc.gz.open")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o200))
	rep, err := Recover(dir, testLogger(t), RecoverOptions{})
	require.NoError(t, err)
	require.Equal(t, RecoverReport{Found: 1, Failed: 1}, rep)
	require.FileExists(t, p)
}

// TestRecoverDirNotListable: only a directory that cannot be listed is an
// error.
func TestRecoverDirNotListable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(p, nil, 0o644))
	_, err := Recover(p, testLogger(t), RecoverOptions{})
	require.ErrorIs(t, err, syscall.ENOTDIR)
	require.ErrorContains(t, err, "listing warc dir for crash recovery")
}
