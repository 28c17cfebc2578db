package rates

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOver(t *testing.T) {
	var urls atomic.Int64
	tr := New(func() Sample { return Sample{URLs: urls.Load(), WARCBytes: 10 * urls.Load()} })
	// Fill the ring by hand: 100 URLs a second for 20 minutes.
	start := time.Now().Add(-20 * time.Minute)
	for i := range 20*60 + 1 {
		urls.Store(int64(100 * i))
		tr.add(start.Add(time.Duration(i) * time.Second))
	}
	for _, d := range []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute} {
		r := tr.Over(d)
		require.InDelta(t, d.Seconds(), r.ActualElapsed, 2, d)
		require.InDelta(t, 100, r.URLsPerSec, 1, d)
		require.InDelta(t, 1000, r.WARCBytesPerSec, 10, d)
	}
	// Only 15 minutes are kept: a longer window gives what there is.
	require.InDelta(t, 15*60, tr.Over(time.Hour).ActualElapsed, 2)
}

func TestYoungTracker(t *testing.T) {
	var urls atomic.Int64
	tr := New(func() Sample { return Sample{URLs: urls.Load()} })
	require.Equal(t, Rate{}, tr.Over(time.Minute), "nothing sampled yet")
	tr.Start()
	defer tr.Stop()
	urls.Store(50)
	time.Sleep(20 * time.Millisecond)
	r := tr.Over(time.Minute)
	require.Greater(t, r.ActualElapsed, 0.0)
	require.Less(t, r.ActualElapsed, 5.0, "the window is what has been sampled so far")
	require.Greater(t, r.URLsPerSec, 0.0)
}
