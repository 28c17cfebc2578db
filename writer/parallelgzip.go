package writer

import (
	"io"
	"runtime"

	"github.com/klauspost/pgzip"
)

// One huge record written by one worker would keep one core busy for
// seconds while the others idle (a 1 GiB text response at level 5: about
// 5 s at 208 MB/s on the development VM, 3 s less on two cores). pgzip compresses its 1 MiB blocks on several goroutines and
// still writes one gzip member: each block's deflate stream is primed with
// the previous block's last 16 KiB, so the ratio stays close to one stream's.
const (
	// parallelMin is the block size from which a compressible block is
	// compressed in parallel. Alone, pgzip gains from 2 MB (1.85x on two
	// cores); under load the other cores are busy and it only costs (4 MB
	// text at c10: -6% URLs/s, +27 MB RSS at 2 MiB). Records of 8 MiB and
	// more are rare enough under load to be worth it when they come.
	parallelMin = 8 << 20
	// parallelBlock is the size of the blocks compressed at once.
	parallelBlock = 1 << 20
)

// parallelGzip is a pgzip writer bounded to GOMAXPROCS blocks in flight,
// which bounds its goroutines and its memory: about 2 MiB per block (input
// and output buffers) plus one deflate state each.
type parallelGzip struct {
	z *pgzip.Writer
}

func newParallelGzip(level int) *parallelGzip {
	z, _ := pgzip.NewWriterLevel(io.Discard, level) // checked by the caller: 1..9 or default
	return &parallelGzip{z: z}
}

// Reset starts a member on w. pgzip's own Reset restores its default
// concurrency, so the bound is set again each time.
func (p *parallelGzip) Reset(w io.Writer) {
	p.z.Reset(w)
	_ = p.z.SetConcurrency(parallelBlock, max(2, runtime.GOMAXPROCS(0))) // parallelBlock > pgzip's minimum
}

func (p *parallelGzip) Write(b []byte) (int, error) { return p.z.Write(b) }

// Close finishes the member and waits for pgzip's goroutines, so that none
// outlives the record or keeps the file's buffer.
func (p *parallelGzip) Close() error {
	err := p.z.Close()
	p.stop()
	return err
}

// stop waits until pgzip's goroutines have written what they hold and
// exited, and detaches it from the file: after a failed record the worker
// cuts the file back, and nothing may write to it after that.
func (p *parallelGzip) stop() { p.z.Reset(io.Discard) }
