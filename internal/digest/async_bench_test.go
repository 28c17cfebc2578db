package digest

import (
	"crypto/sha1"
	"testing"
)

// BenchmarkAsync: the time the writing goroutine spends on 8 MiB written
// in 32 KiB pieces, hashed inline or by Async (which hashes all but the
// first MiB on other goroutines).
func BenchmarkAsync(b *testing.B) {
	p := make([]byte, 32<<10)
	for _, async := range []bool{false, true} {
		name := "inline"
		if async {
			name = "async"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(8 << 20)
			b.ReportAllocs()
			for b.Loop() {
				var h = sha1.New()
				if async {
					h = NewAsync(h, NewLanes(2))
				}
				for range 256 {
					h.Write(p)
				}
				h.Sum(nil)
			}
		})
	}
}
