package warcscan

import (
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// warcRecord is a whole record with the given type, extra header lines
// (each ending in CRLF) and block.
func warcRecord(typ, extra, block string) []byte {
	return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: <urn:uuid:%x>\r\n"+
		"WARC-Date: 2024-01-02T03:04:05Z\r\n%sContent-Length: %d\r\n\r\n%s\r\n\r\n",
		typ, sha1.Sum([]byte(typ+extra+block)), extra, len(block), block)
}

// gzipMember compresses p as one gzip member, with the standard library's
// gzip rather than the one the scanner reads with.
func gzipMember(t testing.TB, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(p)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// file is records laid out as one codec does, with where each one ends.
type file struct {
	data []byte
	ends []int64
}

// makeFile lays records out as codec c does: one gzip member (standard
// library) or zstd frame (the zstd command) each, or end to end.
func makeFile(t testing.TB, c Codec, recs ...[]byte) file {
	t.Helper()
	var f file
	for _, r := range recs {
		switch c {
		case Gzip:
			r = gzipMember(t, r)
		case Zstd:
			r = zstdcli.Frame(t, r, nil)
		}
		f.data = append(f.data, r...)
		f.ends = append(f.ends, int64(len(f.data)))
	}
	return f
}

// scanned is what a scan of a whole file saw.
type scanned struct {
	offsets, lengths []int64
	types            []string
	blockSHA1        []string
	err              error // what ended the scan: io.EOF when it ended well
	end, records     int64
}

// scanAll reads every record and its block.
func scanAll(r io.Reader, opts Options) scanned {
	var out scanned
	s := New(r, opts)
	for {
		rec, err := s.Next()
		if err != nil {
			out.err = err
			break
		}
		typ, _ := rec.Header.Get("WARC-Type")
		h := sha1.New()
		if _, err := io.Copy(h, rec.Block); err != nil {
			typ += " (block: " + err.Error() + ")"
		}
		if err := s.Finish(); err != nil {
			out.err = err
			break
		}
		out.offsets = append(out.offsets, rec.Offset)
		out.lengths = append(out.lengths, rec.Length)
		out.types = append(out.types, typ)
		out.blockSHA1 = append(out.blockSHA1, fmt.Sprintf("%x", h.Sum(nil)))
	}
	out.end, out.records = s.End(), s.Records()
	return out
}

// codecs are the codecs every table test runs for.
var codecs = []Codec{Gzip, Zstd, None}

func sha1Hex(s string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(s))) }

// TestScanner: for each codec, files of whole records scan to io.EOF with
// every record's place in the file, header and block; anything else stops
// with ErrNotWhole, End just after the last whole record.
func TestScanner(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", (fileBuf+unitBuf)/16+1000) // larger than both buffers
	info := warcRecord("warcinfo", "Content-Type: application/warc-fields\r\n", "software: test\r\n")
	resp := warcRecord("response", "WARC-Target-URI: http://example.com/\r\n", "HTTP/1.1 200 OK\r\n\r\nhello")
	large := warcRecord("resource", "WARC-Target-URI: urn:big\r\n", big)
	empty := warcRecord("metadata", "", "")

	for _, c := range codecs {
		three := makeFile(t, c, info, resp, large)
		tests := []struct {
			name      string
			data      []byte
			types     []string // records read whole
			blocks    []string // their blocks
			end       int64
			notWhole  bool // the scan stops with ErrNotWhole (else io.EOF)
			sameAsEnd bool // End is the length of the data
		}{
			{name: "empty file", data: nil},
			{name: "one record", data: makeFile(t, c, info).data, types: []string{"warcinfo"},
				blocks: []string{"software: test\r\n"}},
			{name: "several records", data: three.data, types: []string{"warcinfo", "response", "resource"},
				blocks: []string{"software: test\r\n", "HTTP/1.1 200 OK\r\n\r\nhello", big}},
			{name: "empty block", data: makeFile(t, c, info, empty).data, types: []string{"warcinfo", "metadata"},
				blocks: []string{"software: test\r\n", ""}},
			{name: "cut in the last record", data: three.data[:three.ends[1]+(three.ends[2]-three.ends[1])/2],
				types: []string{"warcinfo", "response"}, blocks: []string{"software: test\r\n", "HTTP/1.1 200 OK\r\n\r\nhello"},
				end: three.ends[1], notWhole: true},
			{name: "cut one byte short", data: three.data[:three.ends[0]-1], end: 0, notWhole: true},
			{name: "garbage after the records", data: append(makeFile(t, c, info).data, "garbage\r\n"...),
				types: []string{"warcinfo"}, blocks: []string{"software: test\r\n"}, end: three.ends[0], notWhole: true},
			{name: "zeros after the records", data: append(makeFile(t, c, info).data, make([]byte, 100)...),
				types: []string{"warcinfo"}, blocks: []string{"software: test\r\n"}, end: three.ends[0], notWhole: true},
			{name: "not a warc file", data: []byte("hello\r\n"), notWhole: true},
		}
		for _, tt := range tests {
			t.Run(c.Name()+"/"+tt.name, func(t *testing.T) {
				got := scanAll(bytes.NewReader(tt.data), Options{Codec: c})
				require.Equal(t, tt.types, got.types)
				var want []string
				for _, b := range tt.blocks {
					want = append(want, sha1Hex(b))
				}
				require.Equal(t, want, got.blockSHA1)
				require.EqualValues(t, len(tt.types), got.records)
				if !tt.notWhole {
					require.ErrorIs(t, got.err, io.EOF)
					require.EqualValues(t, len(tt.data), got.end)
				} else {
					require.ErrorIs(t, got.err, ErrNotWhole)
					require.Equal(t, tt.end, got.end)
				}
				// Records lie end to end from the start of the file.
				at := int64(0)
				for i := range got.offsets {
					require.Equal(t, at, got.offsets[i], "offset of record %d", i)
					at += got.lengths[i]
				}
				require.Equal(t, got.end, at)
			})
		}
	}
}

// TestScannerStops: each way a record or a unit can fail to be whole
// stops the scan after the records before it.
func TestScannerStops(t *testing.T) {
	info := warcRecord("warcinfo", "", "x")
	rec := warcRecord("resource", "WARC-Target-URI: urn:a\r\n", "block")
	tests := []struct {
		name  string
		codec Codec
		bad   []byte // follows info
	}{
		{"bare LF line endings", None, bytes.ReplaceAll(rec, []byte("\r\n"), []byte("\n"))},
		{"version 2.0", None, bytes.Replace(rec, []byte("WARC/1.1"), []byte("WARC/2.0"), 1)},
		{"Content-Length too long", None, bytes.Replace(rec, []byte("Content-Length: 5"), []byte("Content-Length: 6"), 1)},
		{"Content-Length repeated", None, bytes.Replace(rec, []byte("Content-Length: 5"), []byte("Content-Length: 5\r\nContent-Length: 5"), 1)},
		{"no WARC-Date", None, bytes.Replace(rec, []byte("WARC-Date"), []byte("X-Date"), 1)},
		{"continuation of Content-Length", None, bytes.Replace(rec, []byte("Content-Length: 5\r\n"), []byte("Content-Length: 5\r\n 0\r\n"), 1)},
		{"control character", None, bytes.Replace(rec, []byte("urn:a"), []byte("urn:\x00"), 1)},
		{"blank line between records", None, append([]byte("\r\n"), rec...)},
		{"two records in a member", Gzip, gzipMember(t, append(rec, rec...))},
		{"bytes after the record in its member", Gzip, gzipMember(t, append(rec, '\n'))},
		{"empty member", Gzip, gzipMember(t, nil)},
		{"bad CRC", Gzip, func() []byte {
			m := gzipMember(t, rec)
			m[len(m)-8] ^= 0xff
			return m
		}()},
		{"gzip header only", Gzip, gzipMember(t, rec)[:10]},
		{"plain record in a gzip file", Gzip, rec},
		{"two records in a frame", Zstd, zstdcli.Frame(t, append(rec, rec...), nil)},
		{"bytes after the record in its frame", Zstd, zstdcli.Frame(t, append(rec, '\n'), nil)},
		{"empty frame", Zstd, zstdcli.Frame(t, nil, nil)},
		{"bad checksum", Zstd, func() []byte {
			m := zstdcli.Frame(t, rec, nil)
			m[len(m)-1] ^= 0xff
			return m
		}()},
		{"frame without checksum", Zstd, zstdcli.Frame(t, rec, nil, "--no-check")},
		{"frame without content size", Zstd, zstdcli.Frame(t, rec, nil, "--no-content-size")},
		{"frame header only", Zstd, zstdcli.Frame(t, rec, nil)[:6]},
		{"frame cut in its checksum", Zstd, func() []byte {
			m := zstdcli.Frame(t, rec, nil)
			return m[:len(m)-2]
		}()},
		{"frame using a dictionary the file lacks", Zstd, zstdcli.Frame(t, rec, testDict(t))},
		{"dictionary frame after a record", Zstd, append(ZstdDictFrame(testDict(t)), zstdcli.Frame(t, rec, testDict(t))...)},
		{"plain record in a zstd file", Zstd, rec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := makeFile(t, tt.codec, info).data
			data := append(append([]byte{}, first...), tt.bad...)
			got := scanAll(bytes.NewReader(data), Options{Codec: tt.codec})
			require.ErrorIs(t, got.err, ErrNotWhole)
			require.EqualValues(t, 1, got.records)
			require.EqualValues(t, len(first), got.end)
		})
	}
}

// TestScannerSniff: without a codec the first bytes choose it.
func TestScannerSniff(t *testing.T) {
	rec := warcRecord("warcinfo", "", "x")
	for _, c := range codecs {
		f := makeFile(t, c, rec, rec)
		s := New(bytes.NewReader(f.data), Options{})
		require.Equal(t, c, s.Codec())
		got := scanAll(bytes.NewReader(f.data), Options{})
		require.ErrorIs(t, got.err, io.EOF)
		require.Equal(t, f.ends, append(got.offsets[1:], got.end))
	}
	require.Equal(t, None, New(bytes.NewReader(nil), Options{}).Codec())
}

func TestForName(t *testing.T) {
	for name, want := range map[string]Codec{
		"a.warc.gz": Gzip, "a.warc.zst": Zstd, "dir.warc/a.warc": None, "a.zst": nil, "a.warc.gz.open": nil, "a.gz": nil, "a.txt": nil, "warc": nil,
	} {
		require.Equal(t, want, ForName(name), name)
	}
}

// TestScannerReadError: a read error of the file ends the scan as itself,
// not as ErrNotWhole, wherever it happens.
func TestScannerReadError(t *testing.T) {
	for _, c := range codecs {
		f := makeFile(t, c, warcRecord("warcinfo", "", "x"), warcRecord("resource", "", strings.Repeat("y", 5000)))
		for _, at := range []int64{0, 1, f.ends[0], f.ends[0] + 30, f.ends[1] - 1} {
			got := scanAll(io.MultiReader(bytes.NewReader(f.data[:at]), iotest.ErrReader(syscall.EIO)), Options{Codec: c})
			require.ErrorIs(t, got.err, syscall.EIO, "%s: error at %d", c.Name(), at)
			require.NotErrorIs(t, got.err, ErrNotWhole)
		}
	}
}

// TestScannerHeaders: a kept header is the header as written, read by Get;
// one longer than MaxHeader is an error; SkipHeaders takes headers of any
// length and keeps none.
func TestScannerHeaders(t *testing.T) {
	rec := warcRecord("resource", "X-Folded: a\r\n\tb \r\n  c\r\nwarc-target-uri: urn:one\r\nWARC-Target-URI: urn:two\r\n", "block")
	s := New(bytes.NewReader(rec), Options{})
	r, err := s.Next()
	require.NoError(t, err)
	require.Equal(t, "WARC/1.1", r.Header.Version)
	require.EqualValues(t, 5, r.Header.ContentLength)
	require.Equal(t, rec[:bytes.Index(rec, []byte("\r\n\r\n"))+4], r.Header.Raw)
	for name, want := range map[string]string{"X-Folded": "a b c", "WARC-Target-URI": "urn:one", "content-length": "5", "WARC-Type": "resource"} {
		got, ok := r.Header.Get(name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	_, ok := r.Header.Get("WARC-Payload-Digest")
	require.False(t, ok)
	_, err = s.Next()
	require.ErrorIs(t, err, io.EOF)
	require.EqualValues(t, len(rec), r.Length)

	long := warcRecord("resource", "WARC-Target-URI: http://example.com/"+strings.Repeat("a", 3<<20)+"\r\n", "block")
	for _, c := range []Codec{Gzip, Zstd} {
		f := makeFile(t, c, long)
		_, err := New(bytes.NewReader(f.data), Options{Codec: c}).Next()
		require.ErrorIs(t, err, ErrHeaderTooLong, c.Name())
		require.NotErrorIs(t, err, ErrNotWhole, c.Name())
		_, err = New(bytes.NewReader(f.data), Options{Codec: c, MaxHeader: 4 << 20}).Next()
		require.NoError(t, err, c.Name())

		s := New(bytes.NewReader(f.data), Options{Codec: c, SkipHeaders: true})
		r, err := s.Next()
		require.NoError(t, err, c.Name())
		require.Nil(t, r.Header.Raw)
		require.EqualValues(t, 5, r.Header.ContentLength)
		_, err = s.Next()
		require.ErrorIs(t, err, io.EOF, c.Name())
		require.EqualValues(t, len(f.data), s.End())
	}
}

// TestScannerShortBlock: a block cut short reads as io.ErrUnexpectedEOF,
// so a reader of the block alone does not take it for whole.
func TestScannerShortBlock(t *testing.T) {
	rec := warcRecord("resource", "", "0123456789")
	s := New(bytes.NewReader(rec[:len(rec)-8]), Options{Codec: None})
	r, err := s.Next()
	require.NoError(t, err)
	b, err := io.ReadAll(r.Block)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, "012345", string(b))
	require.ErrorIs(t, s.Finish(), ErrNotWhole)
	require.Zero(t, s.Records())
}

// zeroReader is n zero bytes, made up as they are read.
type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.n)]
	clear(p)
	z.n -= int64(len(p))
	return len(p), nil
}

// TestScannerFlatMemory: a record of many times the buffers, read or
// skipped, costs the buffers and no more.
func TestScannerFlatMemory(t *testing.T) {
	const blockLen = 64 << 20
	head, tail, _ := bytes.Cut(warcRecord("resource", "", "BLOCK"), []byte("BLOCK"))
	head = bytes.Replace(head, []byte("Content-Length: 5"), fmt.Appendf(nil, "Content-Length: %d", blockLen), 1)
	plain := func() io.Reader {
		return io.MultiReader(bytes.NewReader(head), &zeroReader{n: blockLen}, bytes.NewReader(tail))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := io.Copy(zw, plain())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	whole, err := io.ReadAll(plain())
	require.NoError(t, err)
	zst := zstdcli.Frame(t, whole, nil)

	for _, tt := range []struct {
		codec     Codec
		r         func() io.Reader
		readBlock bool
	}{
		{None, plain, true}, {None, plain, false},
		{Gzip, func() io.Reader { return bytes.NewReader(gz.Bytes()) }, true},
		{Gzip, func() io.Reader { return bytes.NewReader(gz.Bytes()) }, false},
		{Zstd, func() io.Reader { return bytes.NewReader(zst) }, true},
		{Zstd, func() io.Reader { return bytes.NewReader(zst) }, false},
	} {
		r := tt.r()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := New(r, Options{Codec: tt.codec})
		rec, err := s.Next()
		require.NoError(t, err)
		if tt.readBlock {
			n, err := io.Copy(io.Discard, rec.Block)
			require.NoError(t, err)
			require.EqualValues(t, blockLen, n)
		}
		_, err = s.Next()
		require.ErrorIs(t, err, io.EOF)
		runtime.ReadMemStats(&after)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20),
			"%s, block read %v: allocated", tt.codec.Name(), tt.readBlock)
	}
}

// TestScannerErrorsStick: after the scan ends, Next keeps returning why.
func TestScannerErrorsStick(t *testing.T) {
	data := append(warcRecord("warcinfo", "", "x"), "junk"...)
	s := New(bytes.NewReader(data), Options{Codec: None})
	_, err := s.Next()
	require.NoError(t, err)
	_, err = s.Next()
	require.ErrorIs(t, err, ErrNotWhole)
	_, err2 := s.Next()
	require.Equal(t, err, err2)
	require.NoError(t, s.Finish())
	require.True(t, errors.Is(err, ErrNotWhole) && strings.Contains(err.Error(), "offset"), err.Error())
}
