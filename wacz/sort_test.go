package wacz

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLineSorter: lines come out in byte order whether they fit in memory,
// need a few runs, or more runs than are merged at once.
func TestLineSorter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var lines []string
	for i := range 5000 {
		// Shared prefixes, varied lengths, one line longer than a run's
		// read buffer.
		l := fmt.Sprintf("com,example)/%x/%s %d {}\n", r.IntN(300), strings.Repeat("z", r.IntN(40)), i)
		if i == 77 {
			l = "com,example)/" + strings.Repeat("long", 40<<10) + "\n"
		}
		lines = append(lines, l)
	}
	want := slices.Clone(lines)
	slices.Sort(want)

	tests := []struct {
		limit    int
		runs     func(n int) bool
		describe string
	}{
		{1 << 30, func(n int) bool { return n == 0 }, "no runs"},
		{64 << 10, func(n int) bool { return n > 1 && n <= maxFanIn }, "a few runs"},
		{1 << 10, func(n int) bool { return n > maxFanIn }, "more runs than one merge takes"},
	}
	for _, tt := range tests {
		t.Run(tt.describe, func(t *testing.T) {
			s := newLineSorter(t.TempDir(), tt.limit)
			for _, l := range lines {
				require.NoError(t, s.add([]byte(l)))
			}
			if len(s.spans) > 0 && len(s.runs) > 0 {
				require.NoError(t, s.spill()) // count the last run too
			}
			require.True(t, tt.runs(len(s.runs)), "%d runs", len(s.runs))
			var got []string
			require.NoError(t, s.each(func(l []byte) error {
				got = append(got, string(l))
				return nil
			}))
			require.Equal(t, want, got)
			require.EqualValues(t, len(lines), s.lines)
		})
	}
}
