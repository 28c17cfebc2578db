package writer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// newCodecEncoder is newEncoder for any compression, at the default levels.
func newCodecEncoder(c warcscan.Codec, dict []byte) *encoder {
	p := &Pool{
		opts: Options{Compression: c, GzipLevel: gzip.DefaultCompression, ZstdLevel: DefaultZstdLevel, ZstdDictionary: dict,
			WARCVersion: "1.0", Digest: "sha1", Base32: true},
		log: slog.New(slog.DiscardHandler),
	}
	f := &memFile{}
	return &encoder{w: newWorker(p, 0), f: f, wf: &warcFile{out: newOutput(f, make([]byte, bufSize)), warcinfoID: "<urn:uuid:0>"}}
}

// zstdBlocks are blocks that take each way through the encoders: tiny (a
// record under 256 bytes, whose content size klauspost would leave out of
// a frame without single segment), text and random bytes in one zstd block
// and in several, and a huge text block (compressed on several cores).
func zstdBlocks() map[string][]byte {
	return map[string][]byte{
		"empty":       nil,
		"tiny":        []byte("HTTP/1.1 204 No Content\r\n\r\n"),
		"text 16KB":   httpResponse(bench.Text(16 << 10)),
		"random 16KB": httpResponse(randomBytes(16<<10, 1)),
		"text 1MB":    httpResponse(bench.Text(1 << 20)),
		"random 1MB":  httpResponse(randomBytes(1<<20, 2)),
		"text huge":   httpResponse(bench.Text(parallelMin + 3<<20 + 17)),
	}
}

// TestSameRecordBytes: the same records written with gzip, zstd (with and
// without a dictionary) and no compression are the same bytes once
// decompressed, by the standard library's gzip and by the zstd command:
// the record encoder is shared, only the compressor differs. Nothing is
// normalised before comparing.
func TestSameRecordBytes(t *testing.T) {
	d := testDict(t)
	type out struct {
		name  string
		enc   *encoder
		plain func(t *testing.T, file []byte) []byte
	}
	decompressZstd := func(dict []byte) func(*testing.T, []byte) []byte {
		return func(t *testing.T, file []byte) []byte {
			path := filepath.Join(t.TempDir(), "f.warc.zst")
			require.NoError(t, os.WriteFile(path, file, 0o644))
			return zstdcli.Decompress(t, path, dict)
		}
	}
	outs := []out{
		{"none", newCodecEncoder(warcscan.None, nil), func(_ *testing.T, file []byte) []byte { return file }},
		{"gzip", newCodecEncoder(warcscan.Gzip, nil), func(t *testing.T, file []byte) []byte {
			zr, err := gzip.NewReader(bytes.NewReader(file))
			require.NoError(t, err)
			b, err := readAll(zr)
			require.NoError(t, err)
			return b
		}},
		{"zstd", newCodecEncoder(warcscan.Zstd, nil), decompressZstd(nil)},
		{"zstd with a dictionary", newCodecEncoder(warcscan.Zstd, d), decompressZstd(d)},
	}
	var names []string
	for name, block := range zstdBlocks() {
		names = append(names, name)
		for _, o := range outs {
			r := Record{
				Type: "response", ID: "<urn:uuid:1>", Date: time.Unix(1e9, 0), TargetURI: "http://example.org/" + name,
				ContentType: "application/http; msgtype=response", Block: bytes.NewReader(block),
				BlockLength: int64(len(block)), BlockDigest: sha1b32(block),
			}
			require.NoError(t, o.enc.w.writeRecord(o.enc.wf, &r), "%s: %s", o.name, name)
		}
	}
	var want []byte
	for _, o := range outs {
		require.NoError(t, o.enc.wf.out.Flush())
		got := o.plain(t, o.enc.f.data)
		if want == nil {
			want = got
			for _, n := range names {
				require.Contains(t, string(want), "WARC-Target-URI: http://example.org/"+n+"\r\n")
			}
			continue
		}
		require.True(t, bytes.Equal(want, got), "%s: %d bytes decompressed differ from the uncompressed %d", o.name, len(got), len(want))
	}
	require.Equal(t, uint64(1), outs[2].enc.w.p.stats.frames[frameParallel].Load(), "the huge block went through the parallel encoder")
}

// readAll reads r to its end.
func readAll(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// TestZstdFiles: a pool writing zstd makes .warc.zst files of one frame
// per record, each with its content size and checksum, as the zstd command
// lists them; with a dictionary each file starts with the dictionary frame
// and the frames need the dictionary to decompress. Both WARC readers
// read them (warccheck, after the zstd command).
func TestZstdFiles(t *testing.T) {
	d := testDict(t)
	for _, withDict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dictionary=%v", withDict), func(t *testing.T) {
			o := Options{Compression: warcscan.Zstd, Workers: 2, RolloverSize: 40 << 10}
			if withDict {
				o.ZstdDictionary = d
			}
			p, dir := newPool(t, o)
			tr := newTracker()
			const n = 30
			for i := range n {
				enqueueAll(t, p, makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/%d", i),
					bodySize: 200 + 900*i, compressible: i%3 != 0, seed: uint64(i)}, tr))
			}
			closePool(t, p)
			tr.requireAll(t, n, nil)
			files := checkFiles(t, dir, n)
			require.Greater(t, len(files), 2, "rolled over")
			var frames uint64
			for name, recs := range files {
				require.True(t, strings.HasSuffix(name, ".warc.zst"), name)
				path := filepath.Join(dir, name)
				l := zstdcli.ListFile(t, path)
				require.Equal(t, len(recs), l.Frames, "%s: one frame per record", name)
				require.True(t, l.HasSize && l.HasCheck, "%s: %+v", name, l)
				frames += uint64(l.Frames)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				if !withDict {
					require.Zero(t, l.Skippable)
					require.Equal(t, int64(0), recs[0].Offset)
					continue
				}
				require.Equal(t, 1, l.Skippable)
				require.Equal(t, binary.LittleEndian.Uint32(d[4:]), l.DictID)
				head := warcscan.ZstdDictFrame(d)
				require.Equal(t, head, data[:len(head)], "%s starts with the dictionary frame", name)
				require.Equal(t, int64(len(head)), recs[0].Offset)
				_, err = zstdcli.Try(t, nil, "-d", "-c", path)
				require.ErrorContains(t, err, "Dictionary mismatch", "frames use the dictionary")
			}
			level, raw := p.stats.frames[frameLevel].Load(), p.stats.frames[frameRaw].Load()
			require.Equal(t, frames, level+raw)
			require.NotZero(t, raw, "random bodies go as raw blocks")
			require.NotZero(t, level, "the rest through the encoder")
		})
	}
}

// TestZstdDictionarySaves: small records, which are what a dictionary is
// for, take less room with one trained on their kind.
func TestZstdDictionarySaves(t *testing.T) {
	d := testDict(t)
	size := func(dict []byte) int64 {
		e := newCodecEncoder(warcscan.Zstd, dict)
		for i := range 50 {
			c := makeCapture(t, captureSpec{uri: fmt.Sprintf("http://example.org/other/%d", i), bodySize: 300, compressible: true, seed: uint64(1000 + i)}, nil)
			for j := range c.Records {
				require.NoError(t, e.w.writeRecord(e.wf, &c.Records[j]))
			}
		}
		return e.wf.out.Size()
	}
	without, with := size(nil), size(d)
	t.Logf("50 small captures: %d bytes without the dictionary, %d with", without, with)
	require.Less(t, float64(with), 0.8*float64(without))
}

// TestZstdLevels: zstd command-line levels map to klauspost's four; levels
// out of range and dictionaries that cannot be used are refused.
func TestZstdLevels(t *testing.T) {
	for level, want := range map[int]zstd.EncoderLevel{
		1: zstd.SpeedFastest, 2: zstd.SpeedFastest, 3: zstd.SpeedDefault, 5: zstd.SpeedDefault,
		6: zstd.SpeedBetterCompression, 9: zstd.SpeedBetterCompression,
		10: zstd.SpeedBestCompression, 19: zstd.SpeedBestCompression, 22: zstd.SpeedBestCompression,
	} {
		require.Equal(t, want, ZstdLevel(level), "level %d", level)
	}
	o, err := Options{Dir: "d", Hostname: "h", Compression: warcscan.Zstd}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultZstdLevel, o.ZstdLevel)

	zero := bytes.Clone(testDict(t))
	binary.LittleEndian.PutUint32(zero[4:], 0)
	for name, o := range map[string]Options{
		"level 23":                 {Compression: warcscan.Zstd, ZstdLevel: 23},
		"level -1":                 {Compression: warcscan.Zstd, ZstdLevel: -1},
		"dictionary without zstd":  {Compression: warcscan.Gzip, ZstdDictionary: testDict(t)},
		"not a dictionary":         {Compression: warcscan.Zstd, ZstdDictionary: []byte("hello")},
		"dictionary with ID 0":     {Compression: warcscan.Zstd, ZstdDictionary: zero},
		"a codec the writer lacks": {Compression: fakeCodec{}},
	} {
		o.Dir, o.Hostname = "d", "h"
		_, err := o.withDefaults()
		require.Error(t, err, name)
	}

	// Each level writes frames that the zstd command reads.
	for _, level := range []int{1, 3, 7, 12} {
		p, dir := newPool(t, Options{Compression: warcscan.Zstd, ZstdLevel: level, Workers: 1})
		enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 50 << 10, compressible: true}, nil))
		closePool(t, p)
		checkFiles(t, dir, 1)
	}
}

type fakeCodec struct{ warcscan.Codec }

func (fakeCodec) Name() string { return "fake" }

// TestZstdHugeRecord: a huge record is compressed on several cores into
// one frame that gives the record back; one that fails half-way leaves no
// goroutine writing, and the next record is written whole.
func TestZstdHugeRecord(t *testing.T) {
	e := newCodecEncoder(warcscan.Zstd, nil)
	m, plain := failThenWhole(t, e)
	require.Equal(t, uint64(1), e.w.p.stats.frames[frameParallel].Load())
	path := filepath.Join(t.TempDir(), "f.warc.zst")
	require.NoError(t, os.WriteFile(path, m, 0o644))
	require.Equal(t, 1, zstdcli.ListFile(t, path).Frames)
	require.True(t, bytes.Equal(plain, zstdcli.Decompress(t, path, nil)))
}

// TestZstdAllocs: once a worker has its encoder, compressing a record
// allocates next to nothing: klauspost's streaming encoder allocates the
// few bytes of the frame header and checksum of a record of more than one
// block (2 here), the rest is reused.
func TestZstdAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -cover and -race")
	}
	e := newCodecEncoder(warcscan.Zstd, nil)
	blocks := [][]byte{httpResponse(randomBytes(256<<10, 1)), httpResponse(bench.Text(256 << 10)), httpResponse(bench.Text(2 << 10))}
	require.LessOrEqual(t, allocsWriting(t, e, blocks), float64(2*len(blocks)))
}

// cutCase is a file recovery must cut back: how many whole records it
// keeps, in how many bytes (0 records: the file is removed).
type cutCase struct {
	name    string
	data    []byte
	records int
	kept    int64
}

// TestRecoverZstd: a .warc.zst file cut anywhere, or with junk after its
// last frame, keeps exactly the whole frames before that point, with or
// without a dictionary; the dictionary frame alone is no record.
func TestRecoverZstd(t *testing.T) {
	d := testDict(t)
	plain := writeSample(t, false, "http://example.org/plain/", 300, 70_000, 2_000)
	for _, withDict := range []bool{false, true} {
		t.Run(fmt.Sprintf("dictionary=%v", withDict), func(t *testing.T) {
			o := Options{Compression: warcscan.Zstd}
			var dict []byte
			if withDict {
				o.ZstdDictionary, dict = d, d
			}
			z := writeSampleWith(t, o, "http://example.org/zst/", 300, 70_000, 2_000)
			head := int64(0)
			if withDict {
				head = int64(len(warcscan.ZstdDictFrame(d)))
			}
			mid := func(a, b int64) int64 { return a + (b-a)/2 }
			frame := func(p []byte) []byte { return zstdcli.Frame(t, p, dict) }
			afterInfo := func(frames ...[]byte) []byte { return cat(append([][]byte{z.data[:z.ends[0]]}, frames...)...) }
			tests := []cutCase{
				{"empty file", nil, 0, 0},
				{"mid warcinfo frame", z.data[:mid(head, z.ends[0])], 0, 0},
				{"warcinfo only", z.data[:z.ends[0]], 1, z.ends[0]},
				{"between frames", z.data[:z.ends[2]], 3, z.ends[2]},
				{"mid frame", z.data[:mid(z.ends[2], z.ends[3])], 3, z.ends[2]},
				{"frame header only", z.data[:z.ends[2]+6], 3, z.ends[2]},
				{"frame without its last checksum byte", z.data[:z.ends[3]-1], 3, z.ends[2]},
				{"whole file", z.data, 7, z.ends[6]},
				{"garbage appended", cat(z.data, []byte("garbage\r\n")), 7, z.ends[6]},
				{"zeros appended", cat(z.data, make([]byte, 4096)), 7, z.ends[6]},
				{"frame of non-WARC data appended", cat(z.data, frame([]byte("hello"))), 7, z.ends[6]},
				{"bad checksum in the last frame", cat(z.data[:z.ends[6]-1], []byte{z.data[z.ends[6]-1] ^ 0xff}), 6, z.ends[5]},
				{"frame with two records", afterInfo(frame(cat(plain.record(1), plain.record(2)))), 1, z.ends[0]},
				{"frames made by the zstd command are whole", afterInfo(frame(plain.record(1)), frame(plain.record(2))),
					3, z.ends[0] + int64(len(frame(plain.record(1)))+len(frame(plain.record(2))))},
			}
			if withDict {
				tests = append(tests,
					cutCase{"dictionary frame only", z.data[:head], 0, 0},
					cutCase{"dictionary frame cut short", z.data[:head/2], 0, 0},
					cutCase{"frame without the dictionary", afterInfo(zstdcli.Frame(t, plain.record(1), nil)), 1, z.ends[0]})
			}
			root := t.TempDir()
			var kept []string
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					dir := filepath.Join(root, strconv.Itoa(i))
					require.NoError(t, os.Mkdir(dir, 0o755))
					if p := recoverOne(t, dir, z.name, tt.data, tt.records, tt.kept); p != "" {
						kept = append(kept, p)
					}
				})
			}
			warccheck.Files(t, kept...)

			// From the tail alone (FinalNames), and by a full scan, at
			// every cut around the records' ends.
			for _, end := range z.ends {
				for _, cut := range []int64{end - 1, end, end + 1} {
					if cut > int64(len(z.data)) {
						continue
					}
					whole, err := finishedTail(bytes.NewReader(z.data[:cut]), cut, warcscan.Zstd)
					require.NoError(t, err)
					require.Equal(t, cut == end, whole, "cut at %d", cut)
					scanEnd, _, stop, err := scanFile(bytes.NewReader(z.data[:cut]), warcscan.Zstd)
					require.NoError(t, err)
					require.Equal(t, cut == end, stop == nil && scanEnd == cut, "cut at %d", cut)
				}
			}
		})
	}
}
