package writer

import (
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// BenchmarkProbe compares the two tests a sample can get, on one full
// sample (8 KB) of random bytes and of text: the byte histogram, which
// every probed block pays, and the level-1 trial, which only samples that
// look random pay.
func BenchmarkProbe(b *testing.B) {
	for _, body := range []string{"random", "text"} {
		s := benchTile(body, 64<<10)[16<<10:][:probePieces*probePiece]
		b.Run("body="+body+"/test=entropy", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				entropy(s)
			}
		})
		b.Run("body="+body+"/test=trial", func(b *testing.B) {
			p := newProbe()
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				p.trialSize(s)
			}
		})
	}
}

// BenchmarkParallelThreshold compresses text blocks of a few MB with one
// gzip writer and with the parallel one, to place parallelMin: below some
// size the hand-offs cost more than the second core gives.
func BenchmarkParallelThreshold(b *testing.B) {
	tile := benchTile("text", 16<<20)
	for _, n := range []int{1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20} {
		for _, par := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%dMB/parallel=%v", n>>20, par), func(b *testing.B) {
				var m member
				if par {
					p := newParallelGzip(gzip.DefaultCompression)
					p.Reset(io.Discard)
					m = p
				} else {
					m, _ = gzip.NewWriterLevel(io.Discard, gzip.DefaultCompression)
				}
				b.SetBytes(int64(n))
				for b.Loop() {
					m.(interface{ Reset(io.Writer) }).Reset(io.Discard)
					for off := 0; off < n; off += copySize {
						_, _ = m.Write(tile[off:min(off+copySize, n)])
					}
					if err := m.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
