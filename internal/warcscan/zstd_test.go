package warcscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

var (
	dictOnce sync.Once
	dict     []byte
)

// testDict is a dictionary trained by `zstd --train` on records like the
// ones the tests write, as an operator would train one.
func testDict(t testing.TB) []byte {
	t.Helper()
	zstdcli.Path(t)
	dictOnce.Do(func() {
		var samples [][]byte
		for i := range 200 {
			samples = append(samples, warcRecord("response", fmt.Sprintf("WARC-Target-URI: http://example.com/page%d\r\n", i),
				fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><title>Page %d</title><body>hello %d</body></html>", i, i)))
		}
		dict = zstdcli.Train(t, samples, 4096)
	})
	require.NotEmpty(t, dict)
	return dict
}

// dictFile is a .warc.zst file whose frames use dict, after head (the
// dictionary frame, or something else to test).
func dictFile(t testing.TB, head, dict []byte, recs ...[]byte) file {
	t.Helper()
	f := file{data: append([]byte{}, head...)}
	for _, r := range recs {
		f.data = append(f.data, zstdcli.Frame(t, r, dict)...)
		f.ends = append(f.ends, int64(len(f.data)))
	}
	return f
}

// compressedDictFrame is the dictionary frame holding dict compressed,
// by the zstd command, into one frame: the other form the spec allows.
func compressedDictFrame(t testing.TB, dict []byte) []byte {
	t.Helper()
	z := zstdcli.Frame(t, dict, nil)
	head := make([]byte, 8)
	binary.LittleEndian.PutUint32(head, zstdDictFrameMagic)
	binary.LittleEndian.PutUint32(head[4:], uint32(len(z)))
	return append(head, z...)
}

// TestScannerZstdDictionary: a file that starts with a dictionary frame,
// the dictionary stored as it is or compressed, reads its frames with it;
// the first record starts after that frame, and extension frames are
// skipped. Frames that do not name the file's dictionary are not whole.
func TestScannerZstdDictionary(t *testing.T) {
	d := testDict(t)
	info := warcRecord("warcinfo", "", "software: test\r\n")
	resp := warcRecord("response", "WARC-Target-URI: http://example.com/page7\r\n", "HTTP/1.1 200 OK\r\n\r\n<html>hello</html>")
	ext := append([]byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0}, "abc"...)

	for _, tt := range []struct {
		name string
		head []byte
	}{
		{"stored dictionary", ZstdDictFrame(d)},
		{"compressed dictionary", compressedDictFrame(t, d)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := dictFile(t, tt.head, d, info, resp)
			s := New(bytes.NewReader(f.data), Options{})
			require.Equal(t, Zstd, s.Codec())
			got := scanAll(bytes.NewReader(f.data), Options{Codec: Zstd})
			require.ErrorIs(t, got.err, io.EOF)
			require.Equal(t, []string{"warcinfo", "response"}, got.types)
			require.Equal(t, []int64{int64(len(tt.head)), f.ends[0]}, got.offsets)
			require.Equal(t, int64(len(f.data)), got.end)

			// An extension frame between records belongs to neither.
			withExt := append(append(append([]byte{}, f.data[:f.ends[0]]...), ext...), f.data[f.ends[0]:]...)
			got = scanAll(bytes.NewReader(withExt), Options{Codec: Zstd})
			require.ErrorIs(t, got.err, io.EOF)
			require.Equal(t, []int64{int64(len(tt.head)), f.ends[0] + int64(len(ext))}, got.offsets)
		})
	}

	head := ZstdDictFrame(d)
	whole := dictFile(t, head, d, info)
	other := bytes.Clone(d)
	binary.LittleEndian.PutUint32(other[4:], binary.LittleEndian.Uint32(d[4:])+1)
	for _, tt := range []struct {
		name string
		data []byte
		end  int64
	}{
		{"frame without the dictionary", append(bytes.Clone(whole.data), zstdcli.Frame(t, resp, nil)...), whole.ends[0]},
		{"frame with another dictionary", append(bytes.Clone(whole.data), zstdcli.Frame(t, resp, other)...), whole.ends[0]},
		{"dictionary frame cut short", head[:len(head)-1], 0},
		{"not a dictionary", append(ZstdDictFrame([]byte("not a dictionary at all")), zstdcli.Frame(t, info, nil)...), 0},
		{"extension frame first, then the dictionary", append(bytes.Clone(ext), whole.data...), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAll(bytes.NewReader(tt.data), Options{Codec: Zstd})
			require.ErrorIs(t, got.err, ErrNotWhole)
			require.Equal(t, tt.end, got.end)
		})
	}
}

func TestZstdDictionaryID(t *testing.T) {
	d := testDict(t)
	id, err := ZstdDictionaryID(d)
	require.NoError(t, err)
	require.Equal(t, binary.LittleEndian.Uint32(d[4:]), id)

	zero := bytes.Clone(d)
	binary.LittleEndian.PutUint32(zero[4:], 0)
	for name, b := range map[string][]byte{
		"text":       []byte("hello, world"),
		"cut":        d[:16],
		"id 0":       zero,
		"zstd frame": zstdcli.Frame(t, d, nil),
		"empty":      nil,
		"over 8 MiB": append(bytes.Clone(d), make([]byte, maxZstdDictionary)...),
	} {
		_, err := ZstdDictionaryID(b)
		require.Error(t, err, name)
	}
}

// TestNewReader: a file of any codec reads as the records end to end, as
// the zstd command and gunzip decompress it.
func TestNewReader(t *testing.T) {
	d := testDict(t)
	info := warcRecord("warcinfo", "", "software: test\r\n")
	resp := warcRecord("response", "WARC-Target-URI: http://example.com/\r\n", string(bytes.Repeat([]byte("hello "), 50000)))
	plain := append(bytes.Clone(info), resp...)
	files := map[string][]byte{
		"gzip":            makeFile(t, Gzip, info, resp).data,
		"zstd":            makeFile(t, Zstd, info, resp).data,
		"zstd dictionary": dictFile(t, ZstdDictFrame(d), d, info, resp).data,
		"none":            plain,
	}
	for name, data := range files {
		got, err := io.ReadAll(iotest.OneByteReader(NewReader(bytes.NewReader(data), nil)))
		require.NoError(t, err, name)
		require.Equal(t, plain, got, name)
	}
	bad := makeFile(t, Zstd, info, resp).data
	bad[len(bad)-1] ^= 1
	_, err := io.ReadAll(NewReader(bytes.NewReader(bad), Zstd))
	require.Error(t, err)
}
