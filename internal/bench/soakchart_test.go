package bench

import (
	"encoding/xml"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tenMinuteSamples is ten minutes of made-up samples, 5 s apart, ending at 600.2 s
// as a real soak does (a sample is late by the time it takes).
func tenMinuteSamples() []SoakSample {
	var ss []SoakSample
	for i := 1; i <= 120; i++ {
		at := time.Duration(i)*5*time.Second + 200*time.Millisecond*time.Duration(i)/120
		f := float64(i) / 120
		ss = append(ss, SoakSample{
			T: at, RSSMB: 40 + 47.3*f, FDs: 41 + 12*f, Goroutines: 1234 - 300*f,
			URLsPerSec: 2613 - 100*math.Sin(f*20), HeapMB: math.NaN(), Queue: 0, BacklogMB: math.NaN(),
		})
	}
	return ss
}

// soakChartDoc is what a reader of the soak chart sees.
type soakChartDoc struct {
	Texts []struct {
		Anchor string `xml:"text-anchor,attr"`
		Weight string `xml:"font-weight,attr"`
		Body   string `xml:",chardata"`
	} `xml:"text"`
	Lines []struct {
		Points string `xml:"points,attr"`
	} `xml:"polyline"`
}

// TestSoakChartTicks: every panel's grid falls at round values of its
// quantity (niceTicks, as the sweep chart's), time at round seconds, and
// the lines run to the plot's right edge, the last sample.
func TestSoakChartTicks(t *testing.T) {
	var b strings.Builder
	require.NoError(t, WriteSoakSVG(&b, tenMinuteSamples()))
	requireWellFormedXML(t, b.String())
	var doc soakChartDoc
	require.NoError(t, xml.Unmarshal([]byte(b.String()), &doc))

	values, times := map[string][]string{}, map[string][]string{}
	panel := ""
	for _, tx := range doc.Texts {
		switch {
		case tx.Weight == "bold":
			panel = tx.Body
		case tx.Anchor == "end":
			values[panel] = append(values[panel], tx.Body)
		case tx.Anchor == "middle":
			times[panel] = append(times[panel], tx.Body)
		}
	}
	require.Equal(t, map[string][]string{
		"RSS (MB)":   {"0", "20", "40", "60", "80", "100"}, // peak 87.3
		"open fds":   {"0", "20", "40", "60"},              // peak 53
		"goroutines": {"0", "500", "1,000", "1,500"},       // peak 1234
		"URLs/s":     {"0", "1,000", "2,000", "3,000"},     // peak 2713
	}, values)
	for _, p := range soakPanels(tenMinuteSamples()) {
		require.Equal(t, []string{"0", "100", "200", "300", "400", "500", "600"}, times[p.title], p.title)
	}

	require.Len(t, doc.Lines, len(soakPanels(tenMinuteSamples())))
	for _, l := range doc.Lines {
		pts := strings.Fields(l.Points)
		last, _, _ := strings.Cut(pts[len(pts)-1], ",")
		x, err := strconv.ParseFloat(last, 64)
		require.NoError(t, err)
		require.InDelta(t, soakLeft+soakPlotW, x, 0.05, "the last sample at the right edge")
	}
}

// TestSoakTimeAxis: time ticks are round seconds up to the last sample,
// where the axis ends.
func TestSoakTimeAxis(t *testing.T) {
	for _, c := range []struct {
		name  string
		last  time.Duration
		ticks []float64
		end   float64
	}{
		{"ten minutes and a bit", 600*time.Second + 200*time.Millisecond, []float64{0, 100, 200, 300, 400, 500, 600}, 600.2},
		{"just under a tick", 599 * time.Second, []float64{0, 100, 200, 300, 400, 500}, 599},
		{"an odd length", 2613 * time.Second, []float64{0, 500, 1000, 1500, 2000, 2500}, 2613},
		{"ending on a tick", 7 * time.Second, []float64{0, 1, 2, 3, 4, 5, 6, 7}, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			ticks, end := soakTimeAxis([]SoakSample{{T: time.Second}, {T: c.last}})
			require.Equal(t, c.ticks, ticks)
			require.InDelta(t, c.end, end, 1e-9)
		})
	}
	ticks, end := soakTimeAxis(nil)
	require.True(t, slices.Equal(ticks, niceTicks(1, soakTSteps)) && end == 1, "no samples: %v %v", ticks, end)
}

// TestSoakChartBacklog: a soak with uploads gets a fifth panel, the
// upload backlog, on round values too; one without has four.
func TestSoakChartBacklog(t *testing.T) {
	ss := tenMinuteSamples()
	require.Len(t, soakPanels(ss), 4)
	for i := range ss {
		ss[i].BacklogMB = 900 * math.Abs(math.Sin(float64(i)/10)) // files of a gigabyte or so, shipped in turn
	}
	var b strings.Builder
	require.NoError(t, WriteSoakSVG(&b, ss))
	requireWellFormedXML(t, b.String())
	var doc soakChartDoc
	require.NoError(t, xml.Unmarshal([]byte(b.String()), &doc))
	require.Len(t, doc.Lines, 5)
	var ticks []string
	panel := ""
	for _, tx := range doc.Texts {
		switch {
		case tx.Weight == "bold":
			panel = tx.Body
		case tx.Anchor == "end" && strings.HasPrefix(panel, "upload backlog"):
			ticks = append(ticks, tx.Body)
		}
	}
	require.Equal(t, []string{"0", "200", "400", "600", "800", "1,000"}, ticks)
}
