package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart colours: proxy rows, and baselines (direct, prefix=-).
const (
	chartProxyColour    = "#2f6db5"
	chartBaselineColour = "#a0a0a0"
	chartFailColour     = "#c0392b"
)

// WriteSweepSVG draws a horizontal bar chart of URLs/s per setting: one bar
// a row in sweep order, the label on the left, the value at the bar's end;
// baselines grey, proxy rows blue, rows whose records check failed red.
func WriteSweepSVG(w io.Writer, rows []SweepRow) error {
	const (
		barH, gap   = 18, 6
		charW       = 7.2 // monospace 12px
		top, bottom = 40, 60
		plotW       = 520
		valueW      = 80
	)
	labelW := 80.0
	maxV := 0.0
	for _, r := range rows {
		labelW = math.Max(labelW, float64(len(r.Setting))*charW+16)
		maxV = math.Max(maxV, r.URLsPerSec)
	}
	if maxV <= 0 {
		maxV = 1
	}
	width := labelW + plotW + valueW
	height := float64(top + bottom + len(rows)*(barH+gap))
	esc := func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="monospace" font-size="12">`+"\n",
		f(width), f(height), f(width), f(height))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="22" font-size="14" font-weight="bold">URLs/s per setting</text>`+"\n", f(labelW))
	// Grid: five steps.
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		x := labelW + plotW*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", f(x), top-4, f(x), f(height-bottom+4))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%.0f</text>`+"\n", f(x), f(height-bottom+18), v)
	}
	for i, r := range rows {
		y := float64(top + i*(barH+gap))
		colour := chartProxyColour
		switch {
		case r.RecordsOK == "false":
			colour = chartFailColour
		case r.Kind != KindProxy:
			colour = chartBaselineColour
		}
		bw := plotW * r.URLsPerSec / maxV
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", f(labelW-8), f(y+barH-5), esc(r.Setting))
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s: %.0f URLs/s</title></rect>`+"\n",
			f(labelW), f(y), f(bw), barH, colour, esc(r.Setting), r.URLsPerSec)
		fmt.Fprintf(&b, `<text x="%s" y="%s">%.0f</text>`+"\n", f(labelW+bw+4), f(y+barH-5), r.URLsPerSec)
	}
	// Legend.
	ly := height - 12
	lx := labelW
	for _, l := range []struct{ colour, name string }{
		{chartProxyColour, "recording proxy"}, {chartBaselineColour, "baseline (direct, prefix=-)"}, {chartFailColour, "records check failed"},
	} {
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s">%s</text>`+"\n",
			f(lx), f(ly-9), l.colour, f(lx+14), f(ly), esc(l.name))
		lx += 14 + float64(len(l.name))*charW + 20
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
