package writer

import (
	"io"
	"runtime"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// A .warc.zst file follows the WARC-zstd specification: each record is one
// zstd frame carrying its content size and checksum, and with a dictionary
// the file starts with a dictionary frame (warcscan.ZstdDictFrame) and
// every frame uses the dictionary and names it by its ID.
//
// A record the probe (compresschoice.go) finds incompressible is written as
// a frame of raw blocks (zstdraw.go): the encoder would store its blocks
// too, but only after searching them for matches, at about a quarter of
// the speed of a probe and a copy (4 MB of random bytes: 2.5 GB/s against
// 10.7 GB/s for gzip's stored member). Every other record goes through the
// encoder at the configured level, which finds what Huffman-only gzip
// would by itself.

// zstdSet is a worker's zstd encoders, each made when first needed and
// reset for every record: one that compresses on the worker's goroutine,
// and one that spreads a huge record over several cores.
type zstdSet struct {
	level zstd.EncoderLevel
	dict  []byte // nil: no dictionary
	enc   *zstd.Encoder
	par   *zstd.Encoder
	probe *probe
	raw   rawZstd
	count *frameCounts
}

// frameCounts counts zstd frames by how they were compressed, indexed like
// frameKinds (the pool's metric).
type frameCounts [len(frameKinds)]atomic.Uint64

// frameKinds: the worker's encoder, the parallel one, raw blocks.
var frameKinds = [...]string{"level", "parallel", "raw"}

const (
	frameLevel = iota
	frameParallel
	frameRaw
)

// ZstdLevel maps a zstd command-line level (1 to 22) to the klauspost
// encoder level nearest in ratio: 1-2 fastest, 3-5 default, 6-9 better,
// 10-22 best (zstd.EncoderLevelFromZstd).
func ZstdLevel(level int) zstd.EncoderLevel { return zstd.EncoderLevelFromZstd(level) }

func newZstdSet(level int, dict []byte, count *frameCounts) *zstdSet {
	z := &zstdSet{level: ZstdLevel(level), dict: dict, probe: newProbe(), count: count}
	if dict != nil {
		z.raw.dictID, _ = warcscan.ZstdDictionaryID(dict) // checked in New
	}
	return z
}

// write writes one record, r, of size bytes as one zstd frame on out: body
// writes the frame's content. A frame that fails half-way is stopped
// before write returns, so nothing is written to out after that.
func (z *zstdSet) write(out io.Writer, r *Record, size int64, body func(io.Writer) error) error {
	v, err := z.probe.judge(r)
	if err != nil {
		return err
	}
	if v == storedOnly {
		return z.writeRaw(out, size, body)
	}
	e, kind := z.encoder(size)
	// The content size goes into the frame header (the spec requires it);
	// Close checks that body wrote exactly that many bytes.
	e.ResetContentSize(out, size)
	if err := body(e); err != nil {
		z.abort(e)
		return err
	}
	if err := e.Close(); err != nil {
		z.abort(e)
		return err
	}
	z.count[kind].Add(1)
	return nil
}

// writeRaw writes a frame of raw blocks.
func (z *zstdSet) writeRaw(out io.Writer, size int64, body func(io.Writer) error) error {
	z.raw.Reset(out, size)
	if err := body(&z.raw); err != nil {
		return err
	}
	if err := z.raw.Close(); err != nil {
		return err
	}
	z.count[frameRaw].Add(1)
	return nil
}

// encoder is the encoder for a record of size bytes, and its kind.
func (z *zstdSet) encoder(size int64) (*zstd.Encoder, int) {
	if size >= parallelMin && runtime.GOMAXPROCS(0) > 1 {
		if z.par == nil {
			z.par = z.newEncoder(zstdWindowParallel,
				zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
				zstd.WithConcurrentBlocks(true))
		}
		return z.par, frameParallel
	}
	if z.enc == nil {
		window := zstdWindowFast
		if z.level > zstd.SpeedDefault {
			window = zstdWindowStrong
		}
		z.enc = z.newEncoder(window, zstd.WithEncoderConcurrency(1))
	}
	return z.enc, frameLevel
}

// Windows: what a frame may refer back to, and what an encoder keeps of
// history (about twice the window, per worker, once it has written a
// record of more than one 128 KiB block). The zstd command uses 2 MiB at
// its default level 3 and up to 8 MiB at level 19; klauspost would take
// 8 MiB at every level but the fastest. 2 MiB at the fast levels keeps a
// worker's encoder at about 7 MiB instead of 19 (and the ratio of web
// content the same: its repeats are nearer); the strong levels, chosen for
// the ratio, keep 8 MiB, the largest window the WARC-zstd spec asks every
// reader to take.
//
// The parallel encoder cuts a record into jobs of four windows (at least
// 2 MiB), several in flight per worker in and out: with 512 KiB it adds
// about 25 MiB of heap while a huge record is written (measured, 200 MB of
// text: 17 → 42 MiB; 2 MiB windows: → 88 MiB), for 0.5% more bytes. As
// with pgzip, it helps while other cores are idle and costs when they are
// busy; one frame either way.
const (
	zstdWindowFast     = 2 << 20
	zstdWindowStrong   = 8 << 20
	zstdWindowParallel = 512 << 10
)

func (z *zstdSet) newEncoder(window int, opts ...zstd.EOption) *zstd.Encoder {
	opts = append(opts,
		zstd.WithWindowSize(window),
		zstd.WithEncoderLevel(z.level),
		zstd.WithEncoderCRC(true),
		// A record that fits one block is compressed in one go; single
		// segment makes such a frame carry its content size even under
		// 256 bytes, where klauspost would otherwise leave it out.
		zstd.WithSingleSegment(true))
	if z.dict != nil {
		opts = append(opts, zstd.WithEncoderDict(z.dict))
	}
	e, _ := zstd.NewWriter(nil, opts...) // options checked in New: a valid level and dictionary
	return e
}

// abort stops a frame that failed half-way: it waits for the parallel
// encoder's goroutines, which would go on writing to the file, and
// detaches the encoder from the file, which the worker then cuts back.
func (z *zstdSet) abort(e *zstd.Encoder) { e.Reset(io.Discard) }
