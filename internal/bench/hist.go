package bench

import (
	"math/bits"
	"time"
)

// histSubBits sets the precision of Histogram: each power of two is split
// into 2^histSubBits linear buckets, so a value is known within 1/128.
const histSubBits = 7

const histBuckets = (64 - histSubBits + 1) << histSubBits

// Histogram counts durations in log-linear buckets (the idea of HDR
// histograms): fixed memory, relative error under 1%, mergeable. The zero
// value is ready; it is not safe for concurrent use (one per worker, then
// Merge).
type Histogram struct {
	counts []uint64
	n      uint64
	max    time.Duration
}

func histIndex(v uint64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	e := bits.Len64(v) - 1
	m := v >> (e - histSubBits) // in [2^sub, 2^(sub+1))
	return (e-histSubBits+1)<<histSubBits + int(m-1<<histSubBits)
}

// histValue is the middle of bucket i.
func histValue(i int) uint64 {
	g := i >> histSubBits
	if g == 0 {
		return uint64(i)
	}
	e := g + histSubBits - 1
	m := uint64(i&(1<<histSubBits-1)) + 1<<histSubBits
	lo := m << (e - histSubBits)
	return lo + (uint64(1)<<(e-histSubBits))/2
}

// Record adds one duration (negative counts as 0).
func (h *Histogram) Record(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	d = max(d, 0)
	h.counts[histIndex(uint64(d))]++
	h.n++
	h.max = max(h.max, d)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest duration recorded, exactly.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 < q <= 1), within the bucket
// precision and never above Max; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histValue(i)), h.max)
		}
	}
	return h.max
}
