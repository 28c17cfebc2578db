package digest

import (
	"bytes"
	"crypto/sha1"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
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

// TestAsyncLanes: a hash past asyncFrom takes a lane and hashes off its
// goroutine; when all lanes are taken, the next one hashes inline (and
// still sums right); Sum gives the lane back, and so does an Async
// dropped without one (an aborted exchange), once it is collected.
func TestAsyncLanes(t *testing.T) {
	big := make([]byte, asyncFrom+asyncBlock)
	var held []*Async
	for range cap(lanes) {
		a := NewAsync(sha1.New())
		a.Write(big)
		if !a.holdsLane() || a.last == nil {
			t.Fatal("a hash past asyncFrom did not take a free lane")
		}
		held = append(held, a)
	}
	extra := NewAsync(sha1.New())
	extra.Write(big)
	if extra.holdsLane() || extra.last != nil {
		t.Fatal("a hash took a lane when none was free")
	}
	want := sha1.Sum(big)
	if got := extra.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("inline past asyncFrom: %x, want %x", got, want)
	}
	if got := held[0].Sum(nil); !bytes.Equal(got, want[:]) || held[0].holdsLane() {
		t.Fatalf("sum %x (want %x), lane still held: %v", got, want, held[0].holdsLane())
	}
	held = nil // dropped without Sum: the collector gives their lanes back
	deadline := time.Now().Add(10 * time.Second)
	for len(lanes) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lanes not given back", len(lanes))
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
