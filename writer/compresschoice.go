package writer

import (
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/flate"
)

// A record's block is judged by a sample of its own bytes before it is
// compressed: deflate at level 5 spends most of its time searching for
// matches, and on bytes that are already compressed (images, video, gzip
// payloads) it finds none and stores them anyway. The MIME type would be a
// guess; the bytes are the answer.
const (
	// probeMin: smaller blocks get the configured level unprobed; compressing
	// them costs little, and they are mostly headers and markup.
	probeMin = 4 << 10
	// The sample: up to probePieces pieces of probePiece bytes, spread over
	// the block (the whole block when it is no larger than the sample).
	probePieces = 4
	probePiece  = 2 << 10
	// lowEntropy (bits per byte, order 0): below it a sample is worth the
	// configured level without a trial. Text, markup, JSON and scripts in
	// Latin script are at 4.5 to 5.5; base64 at just under 6 (64 symbols);
	// text in other scripts and executables at 6 to 7.5; compressed formats
	// at 7.9 and above.
	lowEntropy = 5.8
	// storedEntropy: at or above it Huffman coding could save at most 1.3%,
	// so an incompressible block is stored rather than Huffman-coded.
	storedEntropy = 7.9
	// lzGain: a trial at level 1 that comes out smaller than this fraction
	// of what Huffman coding alone would give has found repeats worth the
	// configured level (an executable, or text in a script whose bytes are
	// spread evenly).
	lzGain = 0.9
)

// verdict is what a sample says a block is worth.
type verdict int8

const (
	fullDeflate verdict = iota // the configured level
	huffmanOnly                // Huffman codes without matches: cheap, saves what order-0 entropy allows
	storedOnly                 // stored deflate blocks: incompressible
)

func (v verdict) String() string {
	return [...]string{"level", "huffman", "stored"}[v]
}

// probe takes a block's sample and judges it. Each worker has its own; it
// allocates once, the trial writer when first needed.
type probe struct {
	buf   []byte
	trial *flate.Writer
	out   countWriter
}

func newProbe() *probe {
	return &probe{buf: make([]byte, probePieces*probePiece)}
}

// judge reads r's sample and returns its verdict. Read failures come back
// as *readError, as from copyBlock.
func (p *probe) judge(r *Record) (verdict, error) {
	if r.BlockLength < probeMin {
		return fullDeflate, nil
	}
	s, err := p.sample(r)
	if err != nil {
		return fullDeflate, err
	}
	return p.verdictOf(s), nil
}

// sample reads the whole block if it fits in the buffer, else probePieces
// pieces centred at 1/5, 2/5, 3/5 and 4/5 of it: away from the start, which
// in a response is the HTTP head.
func (p *probe) sample(r *Record) ([]byte, error) {
	n := r.BlockLength
	if n <= int64(len(p.buf)) {
		return p.buf[:n], readFull(r, p.buf[:n], 0)
	}
	for i := range probePieces {
		at := n*int64(i+1)/(probePieces+1) - probePiece/2
		if err := readFull(r, p.buf[i*probePiece:(i+1)*probePiece], at); err != nil {
			return nil, err
		}
	}
	return p.buf, nil
}

func readFull(r *Record, b []byte, at int64) error {
	m, err := r.Block.ReadAt(b, r.BlockOffset+at)
	if m < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return &readError{fmt.Errorf("sampling block of %d bytes at offset %d: %w", r.BlockLength, r.BlockOffset+at, err)}
	}
	return nil
}

// verdictOf judges a sample: a byte histogram first, which settles text at
// the cost of one pass; only a sample that looks random is trial-compressed
// at level 1, which finds repeats the histogram cannot see.
func (p *probe) verdictOf(s []byte) verdict {
	h := entropy(s)
	if h < lowEntropy {
		return fullDeflate
	}
	huffman := h / 8 * float64(len(s))
	if float64(p.trialSize(s)) < lzGain*huffman {
		return fullDeflate
	}
	if h >= storedEntropy {
		return storedOnly
	}
	return huffmanOnly
}

// trialSize is the size of s deflated at level 1.
func (p *probe) trialSize(s []byte) int64 {
	p.out = 0
	if p.trial == nil {
		p.trial, _ = flate.NewWriter(&p.out, flate.BestSpeed) // a valid level
	} else {
		p.trial.Reset(&p.out)
	}
	_, _ = p.trial.Write(s) // countWriter does not fail
	_ = p.trial.Close()
	return int64(p.out)
}

// entropy estimates the order-0 entropy of s in bits per byte, with the
// Miller-Madow correction: a sample of a few KB of random bytes does not
// fill all 256 counts evenly, and would otherwise look compressible. It
// runs for every probed record, so it counts into four histograms (a run
// of one byte value does not wait on its own increments) and takes
// k·log2(k) from a table rather than calling Log2 256 times.
func entropy(s []byte) float64 {
	if len(s) == 0 {
		return 0
	}
	var c [4][256]uint32
	i := 0
	for ; i+4 <= len(s); i += 4 {
		c[0][s[i]]++
		c[1][s[i+1]]++
		c[2][s[i+2]]++
		c[3][s[i+3]]++
	}
	for ; i < len(s); i++ {
		c[0][s[i]]++
	}
	n := float64(len(s))
	var sum float64
	seen := 0
	for b := range 256 {
		k := c[0][b] + c[1][b] + c[2][b] + c[3][b]
		if k > 0 {
			sum += kLog2k(k)
			seen++
		}
	}
	return math.Log2(n) - sum/n + float64(seen-1)/(2*n*math.Ln2)
}

// kLog2kTable holds k·log2(k) for every count a probe's sample can reach.
var kLog2kTable = func() *[probePieces*probePiece + 1]float64 {
	var t [probePieces*probePiece + 1]float64
	for k := 1; k < len(t); k++ {
		t[k] = float64(k) * math.Log2(float64(k))
	}
	return &t
}()

func kLog2k(k uint32) float64 {
	if int(k) < len(kLog2kTable) {
		return kLog2kTable[k]
	}
	return float64(k) * math.Log2(float64(k))
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
