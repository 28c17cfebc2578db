package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Soak chart geometry, in pixels: four panels stacked, one time axis each.
const (
	soakLeft, soakRight, soakTop = 70.0, 20.0, 40.0
	soakPlotW, soakPlotH         = 640.0, 110.0
	soakGap                      = 50.0
	// Grid steps at most: five in a panel's height (22 pixels apart at
	// least), six along time, as the sweep chart's.
	soakYSteps, soakTSteps = 5, chartMaxSteps
)

// soakPanel is one of the soak chart's line charts.
type soakPanel struct {
	title string
	get   func(SoakSample) float64
}

// soakPanels are the charts of ss: RSS, fds, goroutines and URLs/s, and
// the upload backlog when the proxy shipped (--upload-store).
func soakPanels(ss []SoakSample) []soakPanel {
	panels := []soakPanel{
		{"RSS (MB)", func(s SoakSample) float64 { return s.RSSMB }},
		{"open fds", func(s SoakSample) float64 { return s.FDs }},
		{"goroutines", func(s SoakSample) float64 { return s.Goroutines }},
		{"URLs/s", func(s SoakSample) float64 { return s.URLsPerSec }},
	}
	for _, s := range ss {
		if !math.IsNaN(s.BacklogMB) {
			return append(panels, soakPanel{"upload backlog (MB): closed files waiting to be shipped",
				func(s SoakSample) float64 { return s.BacklogMB }})
		}
	}
	return panels
}

// WriteSoakSVG draws stacked line charts over time: RSS, fds, goroutines,
// URLs/s and, with uploads, the upload backlog, in the sweep chart's style, each with its grid at
// round values (niceTicks) of its own quantity and of time.
func WriteSoakSVG(w io.Writer, ss []SoakSample) error {
	panels := soakPanels(ss)
	width, height := soakLeft+soakPlotW+soakRight, soakTop+float64(len(panels))*(soakPlotH+soakGap)
	tTicks, tEnd := soakTimeAxis(ss)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="monospace" font-size="12">`+"\n",
		num(width), num(height), num(width), num(height))
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="%s" y="22" font-size="14" font-weight="bold">warcbench soak: proxy over time (s)</text>`+"\n", num(soakLeft))
	for i, p := range panels {
		top := soakTop + float64(i)*(soakPlotH+soakGap) + 16
		writeSoakPanel(&b, p, ss, top, tTicks, tEnd)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// soakTimeAxis returns the time at the plot's right edge, the last
// sample's, so that the lines fill the width although a soak rarely ends
// on a round time (600.2 s), and the ticks up to it at round seconds
// (niceTicks). Those are asked for one step more than shown, since the
// tick past the end is dropped: 600.2 s gets 100 s steps, not 200 s.
// Without samples the axis is 0 to 1 s.
func soakTimeAxis(ss []SoakSample) (ticks []float64, end float64) {
	if len(ss) == 0 || ss[len(ss)-1].T <= 0 {
		return niceTicks(1, soakTSteps), 1
	}
	end = ss[len(ss)-1].T.Seconds()
	for _, t := range niceTicks(end, soakTSteps+1) {
		if t <= end {
			ticks = append(ticks, t)
		}
	}
	return ticks, end
}

// writeSoakPanel writes one panel whose plot starts at top: its title,
// a grid line and label per value tick and per time tick (time under the
// plot), and the line of its samples.
func writeSoakPanel(b *strings.Builder, p soakPanel, ss []SoakSample, top float64, tTicks []float64, tEnd float64) {
	vTicks := niceTicks(peak(ss, p.get), soakYSteps)
	vMax := vTicks[len(vTicks)-1]
	x := func(t float64) float64 { return soakLeft + soakPlotW*t/tEnd }
	y := func(v float64) float64 { return top + soakPlotH - soakPlotH*v/vMax }
	bottom := top + soakPlotH
	fmt.Fprintf(b, `<text x="%s" y="%s" font-weight="bold">%s</text>`+"\n", num(soakLeft), num(top-6), esc(p.title))
	for _, v := range vTicks {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(soakLeft), num(y(v)), num(soakLeft+soakPlotW), num(y(v)))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" fill="#555">%s</text>`+"\n", num(soakLeft-6), num(y(v)+4), formatTick(v, vTicks[1]))
	}
	for _, t := range tTicks {
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(x(t)), num(top), num(x(t)), num(bottom))
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", num(x(t)), num(bottom+16), formatTick(t, tTicks[1]))
	}
	var pts []string
	for _, s := range ss {
		if v := p.get(s); !math.IsNaN(v) {
			pts = append(pts, num(x(s.T.Seconds()))+","+num(y(v)))
		}
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", chartProxyColour, strings.Join(pts, " "))
}
