package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHistogram(t *testing.T) {
	var h Histogram
	require.Zero(t, h.Quantile(0.5))
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, time.Millisecond}} {
		require.InEpsilon(t, float64(c.want), float64(h.Quantile(c.q)), 0.01, "q=%v", c.q)
	}
	require.Equal(t, time.Millisecond, h.Max())

	var other Histogram
	other.Record(time.Hour)
	other.Record(3)
	h.Merge(&other)
	require.Equal(t, uint64(1002), h.Count())
	require.Equal(t, time.Hour, h.Max())
	require.Equal(t, time.Duration(3), func() time.Duration { var s Histogram; s.Record(3); return s.Quantile(0.5) }())

	// Bucket indexes are monotonic and values round-trip within 1%.
	prev := -1
	for v := uint64(1); v < 1<<40; v = v*5/4 + 1 {
		i := histIndex(v)
		require.GreaterOrEqual(t, i, prev)
		prev = i
		require.InEpsilon(t, float64(v), float64(histValue(i)), 0.01, "v=%d", v)
	}
}
