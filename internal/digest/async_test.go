package digest

import (
	"bytes"
	"crypto/sha1"
	"math/rand/v2"
	"testing"
)

// TestAsyncSameSum: whatever the sizes of the writes, and with sums taken
// on the way, an Async hash gives the sum of the same bytes hashed inline.
func TestAsyncSameSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	input := make([]byte, 5*asyncFrom+12345)
	for i := range input {
		input[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name  string
		write int // bytes per Write (0: random up to 300 KB)
	}{
		{"whole", len(input)}, {"4KiB", 4 << 10}, {"1MiB", 1 << 20}, {"odd", 1}, {"random", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ref := NewAsync(sha1.New()), sha1.New()
			for p := input; len(p) > 0; {
				n := tc.write
				if n == 0 {
					n = 1 + rng.IntN(300<<10)
				}
				if tc.name == "odd" {
					n = 1 + rng.IntN(70000)
				}
				n = min(n, len(p))
				a.Write(p[:n])
				ref.Write(p[:n])
				p = p[n:]
				if rng.IntN(40) == 0 { // a sum on the way changes nothing
					if got, want := a.Sum(nil), ref.Sum(nil); !bytes.Equal(got, want) {
						t.Fatalf("sum after %d bytes: %x, want %x", len(input)-len(p), got, want)
					}
				}
			}
			if got, want := a.Sum([]byte("x")), ref.Sum([]byte("x")); !bytes.Equal(got, want) {
				t.Fatalf("sum %x, want %x", got, want)
			}
			a.Reset()
			a.Write(input[:10])
			if got, want := a.Sum(nil), sha1.Sum(input[:10]); !bytes.Equal(got, want[:]) {
				t.Fatalf("after Reset: %x, want %x", got, want)
			}
		})
	}
}

// TestAsyncDroppedWithoutSum: an Async given up half-way (an aborted
// exchange) leaves no goroutine behind once its blocks are hashed.
func TestAsyncDroppedWithoutSum(t *testing.T) {
	a := NewAsync(sha1.New())
	a.Write(make([]byte, 3*asyncFrom))
	last := a.last
	if last == nil {
		t.Fatal("nothing was handed over past asyncFrom")
	}
	<-last // the chain ends by itself; nothing waits for a Sum
}
