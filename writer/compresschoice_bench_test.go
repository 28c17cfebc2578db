package writer

import (
	"testing"
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
