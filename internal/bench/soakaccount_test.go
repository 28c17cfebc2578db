package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAccount(t *testing.T) {
	whole := []soakCapture{{}}
	cut := []soakCapture{{Truncated: "disconnect"}}
	for _, tc := range []struct {
		name     string
		outcomes map[uint64]soakOutcome
		captures map[uint64][]soakCapture
		unknown  int64
		exact    bool
		check    func(t *testing.T, a *Accounting)
	}{
		{
			name: "every kind where it belongs",
			outcomes: map[uint64]soakOutcome{
				1: {OutWhole, 1}, 2: {OutClientAbort, 1}, 3: {OutOriginCut, 1}, 4: {OutProxyError, 1}, 5: {OutNoResponse, 1},
			},
			captures: map[uint64][]soakCapture{1: whole, 2: cut, 3: {{Truncated: "time"}}},
			exact:    true,
			check: func(t *testing.T, a *Accounting) {
				for _, k := range []string{OutWhole, OutClientAbort, OutOriginCut} {
					require.Equal(t, int64(1), a.Kinds[k].Recorded, k)
				}
				require.Equal(t, int64(5), a.Total(func(c *KindCount) int64 { return c.Exchanges }))
			},
		},
		{
			name:     "missing",
			outcomes: map[uint64]soakOutcome{1: {OutWhole, 1}, 2: {OutOriginCut, 1}},
			captures: map[uint64][]soakCapture{1: whole},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(1), a.Kinds[OutOriginCut].Missing) },
		},
		{
			name:     "duplicate",
			outcomes: map[uint64]soakOutcome{1: {OutWhole, 1}},
			captures: map[uint64][]soakCapture{1: {{}, {}}},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(1), a.Kinds[OutWhole].Duplicates) },
		},
		{
			name:     "whole marked truncated",
			outcomes: map[uint64]soakOutcome{1: {OutWhole, 1}},
			captures: map[uint64][]soakCapture{1: cut},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(1), a.Kinds[OutWhole].WrongTrunc) },
		},
		{
			name:     "client abort not marked",
			outcomes: map[uint64]soakOutcome{1: {OutClientAbort, 1}},
			captures: map[uint64][]soakCapture{1: whole},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(1), a.Kinds[OutClientAbort].WrongTrunc) },
		},
		{
			name:     "proxy error recorded",
			outcomes: map[uint64]soakOutcome{1: {OutProxyError, 1}},
			captures: map[uint64][]soakCapture{1: whole},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(1), a.Kinds[OutProxyError].Unexpected) },
		},
		{
			name:     "no response: truncated records up to one per attempt are allowed",
			outcomes: map[uint64]soakOutcome{1: {OutNoResponse, 2}},
			captures: map[uint64][]soakCapture{1: {cut[0], cut[0]}},
			exact:    true,
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(2), a.Kinds[OutNoResponse].RecordedNoHead) },
		},
		{
			name:     "no response: more records than attempts, or whole ones",
			outcomes: map[uint64]soakOutcome{1: {OutNoResponse, 1}, 2: {OutNoResponse, 1}},
			captures: map[uint64][]soakCapture{1: {cut[0], cut[0]}, 2: whole},
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(2), a.Kinds[OutNoResponse].Unexpected) },
		},
		{
			name:     "records of no request",
			outcomes: map[uint64]soakOutcome{1: {OutWhole, 1}},
			captures: map[uint64][]soakCapture{1: whole, 7: whole},
			unknown:  2,
			check:    func(t *testing.T, a *Accounting) { require.Equal(t, int64(3), a.Unknown) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Account(tc.outcomes, tc.captures, tc.unknown)
			require.Equal(t, tc.exact, a.Exact(), a.Line())
			tc.check(t, a)
		})
	}
}

func TestSoakID(t *testing.T) {
	for uri, want := range map[string]uint64{
		"http://127.0.0.1:1/bytes/1KB?soak=42":   42,
		"https://127.0.0.1:1/stall/0/5?soak=7":   7,
		"http://127.0.0.1:1/bytes/1KB":           0,
		"http://127.0.0.1:1/bytes/1KB?soak=x":    0,
		"http://127.0.0.1:1/bytes/1KB?soak=0":    0,
		"http://127.0.0.1:1/x?a=1&soak=9&text=1": 9,
	} {
		id, ok := soakID(uri)
		require.Equal(t, want, id, uri)
		require.Equal(t, want != 0, ok, uri)
	}
}

func TestSlope(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"flat", []float64{0, 1, 2, 3}, []float64{5, 5, 5, 5}, 0},
		{"line", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2},
		{"falling", []float64{1, 2, 3}, []float64{9, 6, 3}, -3},
		{"noise around a line", []float64{0, 1, 2, 3}, []float64{0, 2, 1, 3}, 0.8},
		{"NaN points skipped", []float64{0, 1, 2, 3}, []float64{1, nan, 5, 7}, 2},
		{"one point", []float64{1}, []float64{1}, nan},
		{"one x", []float64{2, 2, 2}, []float64{1, 2, 3}, nan},
		{"empty", nil, nil, nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Slope(tc.xs, tc.ys)
			if math.IsNaN(tc.want) {
				require.True(t, math.IsNaN(got), "got %v", got)
				return
			}
			require.InDelta(t, tc.want, got, 1e-9)
		})
	}
}

func TestTrends(t *testing.T) {
	samples := func(rss func(min float64) float64) []SoakSample {
		var ss []SoakSample
		for i := 0; i <= 20; i++ {
			at := time.Duration(i) * 30 * time.Second
			ss = append(ss, SoakSample{T: at, RSSMB: rss(at.Minutes()), FDs: 50, Goroutines: 100})
		}
		return ss
	}
	for _, tc := range []struct {
		name      string
		rss       func(float64) float64
		flat      bool
		perMinute float64
	}{
		{"steady", func(float64) float64 { return 100 }, true, 0},
		{"slow growth within 10%", func(m float64) float64 { return 100 + m }, true, 1},
		{"leak", func(m float64) float64 { return 100 + 10*m }, false, 10},
		{"growth only in the first half", func(m float64) float64 { return 100 + 20*min(m, 5) }, true, 0},
		{"steep fall is no leak", func(m float64) float64 { return 300 - 20*m }, true, -20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := Trends(samples(tc.rss), 10)
			require.Len(t, tr, 3)
			require.Equal(t, "rss_mb", tr[0].Name)
			require.InDelta(t, tc.perMinute, tr[0].PerMinute, 1e-9)
			require.Equal(t, tc.flat, tr[0].Flat, "%+v", tr[0])
			require.True(t, tr[0].Judged)
			require.True(t, tr[1].Flat && tr[2].Flat)
		})
	}
	short := Trends(samples(func(m float64) float64 { return 100 + 1000*m })[:4], 10)[0]
	require.False(t, short.Judged, "a last half of 30s is too short to judge")
	require.True(t, short.Flat, "and counts as flat: %+v", short)
}
