package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		name string
		maxV float64
		want []float64
	}{
		{"the issue's 10452 (ticks fell at 2613, 5226...)", 10452, []float64{0, 2000, 4000, 6000, 8000, 10000, 12000}},
		{"direct at 33105", 33105, []float64{0, 10000, 20000, 30000, 40000}},
		{"thousands", 7710, []float64{0, 2000, 4000, 6000, 8000}},
		{"a max on a tick ends there", 1000, []float64{0, 200, 400, 600, 800, 1000}},
		{"just over a tick adds a step", 5.0001, []float64{0, 1, 2, 3, 4, 5, 6}},
		{"step of five", 13, []float64{0, 5, 10, 15}},
		{"below one", 0.37, []float64{0, 0.1, 0.2, 0.3, 0.4}},
		{"nothing measured", 0, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"NaN", math.NaN(), []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, niceTicks(c.maxV, 6))
		})
	}
}

// TestNiceTicksRound: over many maxima, every axis covers the maximum in
// at most six steps of 1, 2 or 5 × 10^n, and no smaller such step would.
func TestNiceTicksRound(t *testing.T) {
	for maxV := 0.013; maxV < 5e6; maxV *= 1.37 {
		ticks := niceTicks(maxV, 6)
		step := ticks[1]
		mant := step / math.Pow(10, math.Floor(math.Log10(step)+1e-9))
		require.Contains(t, []float64{1, 2, 5}, math.Round(mant*1e6)/1e6, "max %v: step %v", maxV, step)
		require.LessOrEqual(t, len(ticks)-1, 6, "max %v: %v", maxV, ticks)
		require.GreaterOrEqual(t, len(ticks)-1, 2, "max %v: %v", maxV, ticks)
		require.GreaterOrEqual(t, ticks[len(ticks)-1], maxV, "max %v: %v", maxV, ticks)
		require.Less(t, ticks[len(ticks)-2], maxV, "max %v: a step too many: %v", maxV, ticks)
	}
}

func TestFormatTick(t *testing.T) {
	for _, c := range []struct {
		v, step float64
		want    string
	}{
		{0, 2000, "0"},
		{2000, 2000, "2,000"},
		{40000, 10000, "40,000"},
		{1500000, 500000, "1,500,000"},
		{500, 100, "500"},
		{0.3, 0.1, "0.3"},
		{0.05, 0.05, "0.05"},
		{1.5, 0.5, "1.5"},
	} {
		t.Run(c.want, func(t *testing.T) {
			require.Equal(t, c.want, formatTick(c.v, c.step))
		})
	}
	require.Equal(t, "-1,234.5", groupThousands(-1234.5, 1))
	require.Equal(t, "33,105", groupThousands(33104.6, 0))
}
