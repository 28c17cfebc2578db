package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chart colours: proxy rows, and baselines (direct, prefix=-).
const (
	chartProxyColour    = "#2f6db5"
	chartBaselineColour = "#a0a0a0"
	chartFailColour     = "#c0392b"
)

// Chart geometry, in pixels. Text is monospace, so a line's width is its
// length times the width of a character at its size (0.6 em).
const (
	chartMargin    = 12.0
	chartBarH      = 18.0
	chartBarGap    = 6.0
	chartPlotW     = 520.0
	chartValueW    = 80.0
	chartCharW     = 7.2 // 12px: labels, ticks, legend
	chartTitleCh   = 8.6 // 14px bold (a little wider than 0.6 em)
	chartCaptionCh = 6.6 // 11px
	chartMaxSteps  = 6   // grid steps at most: 10,353 gets 12,000, not 15,000
)

// sweepChart lays out the sweep's bar chart.
type sweepChart struct {
	b             strings.Builder
	rows          []SweepRow
	labelW, width float64
	ticks         []float64
	y             float64 // where the next part starts
}

// WriteSweepSVG draws a horizontal bar chart of URLs/s per setting: a
// title and caption that say the workload (wl), one bar a row in sweep
// order with its label on the left and its value at the end, a grid at
// round values, and a legend of the colours it uses: proxy rows blue,
// baselines grey, rows whose records check failed red.
func WriteSweepSVG(w io.Writer, wl Workload, rows []SweepRow) error {
	c := &sweepChart{rows: rows, labelW: 80}
	maxV := 0.0
	for _, r := range rows {
		c.labelW = math.Max(c.labelW, chartMargin+float64(utf8.RuneCountInString(r.Setting))*chartCharW+8)
		maxV = math.Max(maxV, r.URLsPerSec)
	}
	c.ticks = niceTicks(maxV, chartMaxSteps)
	c.width = c.labelW + chartPlotW + chartValueW
	title := wrapText(wl.Title(), int((c.width-2*chartMargin)/chartTitleCh))
	var caption []string
	for _, l := range wl.Caption() {
		caption = append(caption, wrapText(l, int((c.width-2*chartMargin)/chartCaptionCh))...)
	}
	plotTop := 22 + 18*float64(len(title)-1) + 15*float64(len(caption)) + 18
	height := plotTop + float64(len(rows))*(chartBarH+chartBarGap) + 50

	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="monospace" font-size="12">`+"\n",
		num(c.width), num(height), num(c.width), num(height))
	c.b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	c.header(title, caption)
	c.y = plotTop
	c.grid()
	c.bars()
	c.legend()
	c.b.WriteString("</svg>\n")
	_, err := io.WriteString(w, c.b.String())
	return err
}

// header writes the title lines and the caption lines under them.
func (c *sweepChart) header(title, caption []string) {
	y := 22.0
	for _, l := range title {
		fmt.Fprintf(&c.b, `<text x="%s" y="%s" font-size="14" font-weight="bold">%s</text>`+"\n", num(chartMargin), num(y), esc(l))
		y += 18
	}
	y -= 3
	for _, l := range caption {
		fmt.Fprintf(&c.b, `<text x="%s" y="%s" font-size="11" fill="#444">%s</text>`+"\n", num(chartMargin), num(y), esc(l))
		y += 15
	}
}

// axisMax is the value at the plot's right edge: the last tick.
func (c *sweepChart) axisMax() float64 { return c.ticks[len(c.ticks)-1] }

// grid writes a vertical line and a label per tick, labels under the bars.
func (c *sweepChart) grid() {
	bottom := c.y + float64(len(c.rows))*(chartBarH+chartBarGap)
	step := c.ticks[1] - c.ticks[0]
	for _, v := range c.ticks {
		x := c.labelW + chartPlotW*v/c.axisMax()
		fmt.Fprintf(&c.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", num(x), num(c.y-4), num(x), num(bottom))
		fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`+"\n", num(x), num(bottom+14), formatTick(v, step))
	}
}

// bars writes a bar, its label and its value per row.
func (c *sweepChart) bars() {
	for i, r := range c.rows {
		y := c.y + float64(i)*(chartBarH+chartBarGap)
		bw := chartPlotW * r.URLsPerSec / c.axisMax()
		v := groupThousands(r.URLsPerSec, 0)
		fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", num(c.labelW-8), num(y+chartBarH-5), esc(r.Setting))
		fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %s URLs/s</title></rect>`+"\n",
			num(c.labelW), num(y), num(bw), num(chartBarH), barColour(r), esc(r.Setting), v)
		fmt.Fprintf(&c.b, `<text x="%s" y="%s">%s</text>`+"\n", num(c.labelW+bw+4), num(y+chartBarH-5), v)
	}
}

func barColour(r SweepRow) string {
	switch {
	case r.RecordsOK == "false":
		return chartFailColour
	case r.Kind != KindProxy:
		return chartBaselineColour
	}
	return chartProxyColour
}

// legend writes, on the last line, an entry per colour the bars use.
func (c *sweepChart) legend() {
	ly := c.y + float64(len(c.rows))*(chartBarH+chartBarGap) + 40
	entries := legendEntries(c.rows)
	total := 0.0
	for _, l := range entries {
		total += legendEntryW(l)
	}
	// Under the plot, or further left if it would run off the right edge.
	lx := math.Max(chartMargin, math.Min(c.labelW, c.width-chartMargin-total))
	for _, l := range entries {
		fmt.Fprintf(&c.b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s">%s</text>`+"\n",
			num(lx), num(ly-9), l.colour, num(lx+14), num(ly), esc(l.name))
		lx += legendEntryW(l)
	}
}

// legendEntryW is the width of an entry: swatch, name and the gap after.
func legendEntryW(l legendEntry) float64 {
	return 14 + float64(utf8.RuneCountInString(l.name))*chartCharW + 20
}

type legendEntry struct{ colour, name string }

// legendEntries names the colours the rows are drawn in, in a fixed
// order; a baseline entry names only the baselines there are.
func legendEntries(rows []SweepRow) []legendEntry {
	var proxy, failed bool
	var baselines []string
	for _, r := range rows {
		switch barColour(r) {
		case chartProxyColour:
			proxy = true
		case chartFailColour:
			failed = true
		case chartBaselineColour:
			if !slices.Contains(baselines, r.Kind) {
				baselines = append(baselines, r.Kind)
			}
		}
	}
	var out []legendEntry
	if proxy {
		out = append(out, legendEntry{chartProxyColour, "recording proxy"})
	}
	if len(baselines) > 0 {
		out = append(out, legendEntry{chartBaselineColour, "baseline (" + strings.Join(baselines, ", ") + ")"})
	}
	if failed {
		out = append(out, legendEntry{chartFailColour, "records check failed"})
	}
	return out
}

// wrapText breaks s into lines of at most width characters, between
// phrases where it can: after a comma, semicolon or colon, or before a
// --flag, so that "plain HTTP" and "--max-conns 1000" stay on one line. A
// phrase longer than a line is broken between words, a word longer than a
// line gets one of its own.
func wrapText(s string, width int) []string {
	var lines []string
	line := ""
	add := func(piece string) {
		switch {
		case line == "":
			line = piece
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(piece) <= width:
			line += " " + piece
		default:
			lines = append(lines, line)
			line = piece
		}
	}
	for _, ph := range phrases(s) {
		if utf8.RuneCountInString(ph) <= width {
			add(ph)
			continue
		}
		for _, w := range strings.Fields(ph) {
			add(w)
		}
	}
	return append(lines, line)
}

// phrases splits s at spaces where a line may break.
func phrases(s string) []string {
	var out []string
	var cur []string
	for _, w := range strings.Fields(s) {
		if n := len(cur); n > 0 && (strings.ContainsAny(cur[n-1][len(cur[n-1])-1:], ",;:") || strings.HasPrefix(w, "--")) {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
		cur = append(cur, w)
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, " "))
	}
	return out
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
