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
			a, ref := NewAsync(sha1.New(), NewLanes(1)), sha1.New()
			for p := input; len(p) > 0; {
				n := tc.write
				if n == 0 {
					n = 1 + rng.IntN(300<<10)
				}
				if tc.name == "odd" {
					n = 1 + rng.IntN(70000)
				}
				n = min(n, len(p))
				_, _ = a.Write(p[:n])
				ref.Write(p[:n])
				p = p[n:]
				if a.n > asyncFrom && a.last == nil && !a.holdsLane() {
					t.Fatalf("past asyncFrom (%d bytes) with a lane free, nothing went off the goroutine", a.n)
				}
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
			_, _ = a.Write(input[:10])
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
	lanes := NewLanes(2)
	big := make([]byte, asyncFrom+asyncBlock)
	first := takeAllLanes(t, lanes, big) // the others are dropped holding theirs
	extra := NewAsync(sha1.New(), lanes)
	_, _ = extra.Write(big)
	if extra.holdsLane() || extra.last != nil {
		t.Fatal("a hash took a lane when none was free")
	}
	want := sha1.Sum(big)
	if got := extra.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("inline past asyncFrom: %x, want %x", got, want)
	}
	if got := first.Sum(nil); !bytes.Equal(got, want[:]) || first.holdsLane() {
		t.Fatalf("sum %x (want %x), lane still held: %v", got, want, first.holdsLane())
	}
	deadline := time.Now().Add(10 * time.Second)
	for lanes.InUse() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lanes not given back", lanes.InUse())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// takeAllLanes writes p to as many hashes as there are lanes, checks that
// each took one, and returns the first.
func takeAllLanes(t *testing.T, lanes *Lanes, p []byte) *Async {
	var first *Async
	for range cap(lanes.free) {
		a := NewAsync(sha1.New(), lanes)
		_, _ = a.Write(p)
		if !a.holdsLane() || a.last == nil {
			t.Fatal("a hash past asyncFrom did not take a free lane")
		}
		if first == nil {
			first = a
		}
	}
	return first
}

// TestAsyncNoLanes: with no lanes (one core) or none given, every byte is
// hashed inline, and the sum is the same.
func TestAsyncNoLanes(t *testing.T) {
	big := make([]byte, 3*asyncFrom)
	want := sha1.Sum(big)
	for _, lanes := range []*Lanes{nil, NewLanes(0)} {
		a := NewAsync(sha1.New(), lanes)
		_, _ = a.Write(big)
		if a.holdsLane() || a.last != nil {
			t.Fatal("hashed off the goroutine without a lane")
		}
		if got := a.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("sum %x, want %x", got, want)
		}
	}
}
