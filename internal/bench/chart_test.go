package bench

import (
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// svgDoc is what a reader of the chart sees: its size and its texts.
type svgDoc struct {
	Width string `xml:"width,attr"`
	Texts []struct {
		X        string `xml:"x,attr"`
		FontSize string `xml:"font-size,attr"`
		Body     string `xml:",chardata"`
	} `xml:"text"`
}

func renderSVG(t *testing.T, wl Workload, rows []SweepRow) (string, svgDoc) {
	t.Helper()
	var b strings.Builder
	require.NoError(t, WriteSweepSVG(&b, wl, rows))
	requireWellFormedXML(t, b.String())
	var doc svgDoc
	require.NoError(t, xml.Unmarshal([]byte(b.String()), &doc))
	return b.String(), doc
}

// rowsOf makes a row per case of cfg, as Sweep would, with made-up figures.
func rowsOf(cfg *SweepConfig) []SweepRow {
	wl := cfg.Workload()
	var rows []SweepRow
	for i, sc := range cfg.plan() {
		r := SweepRow{Setting: sc.label, Kind: sc.kind, URLs: 1000, URLsPerSec: float64(2613 * (i + 1)), RecordsOK: "-",
			Case: wl.caseValues(sc.kind, sc.group, sc.setting)}
		if sc.kind == KindProxy {
			r.RecordsOK = "true"
		}
		rows = append(rows, r)
	}
	return rows
}

// TestSweepChartCaption: the title and caption lines, joined, are the
// workload's, and each fits the chart's width (wrapped, not clipped).
func TestSweepChartCaption(t *testing.T) {
	cfg := tinySweep(t) // short labels: a narrow chart
	cfg.Text, cfg.TLS, cfg.Mode, cfg.Duration = []bool{true}, []bool{true}, []string{ModeNewConn}, 10*time.Second
	cfg.ExtraArgs = append(cfg.ExtraArgs, "--method-filter", "POST", "--dedup-min-text-size", "100000", "--rollover-size", "1000000000", "--queue-size", "5000")
	wl := cfg.Workload()
	_, doc := renderSVG(t, wl, rowsOf(&cfg))
	width, err := strconv.ParseFloat(doc.Width, 64)
	require.NoError(t, err)
	var title, caption []string
	for _, tx := range doc.Texts {
		charW := map[string]float64{"14": chartTitleCh, "11": chartCaptionCh}[tx.FontSize]
		if charW == 0 {
			continue
		}
		x, err := strconv.ParseFloat(tx.X, 64)
		require.NoError(t, err)
		require.LessOrEqual(t, x+float64(utf8.RuneCountInString(tx.Body))*charW, width-chartMargin+1, "%q", tx.Body)
		if tx.FontSize == "14" {
			title = append(title, tx.Body)
		} else {
			caption = append(caption, tx.Body)
		}
	}
	require.Greater(t, len(title), 1, "this title is too long for one line")
	require.Equal(t, wl.Title(), strings.Join(title, " "))
	require.Equal(t, strings.Join(wl.Caption(), " "), strings.Join(caption, " "))
	require.Contains(t, strings.Join(caption, "\n"), "--queue-size 5000", "a flag and its value stay on one line")
}

// TestSweepChartTicks: grid labels at round values, bar values grouped.
func TestSweepChartTicks(t *testing.T) {
	cfg := tinySweep(t)
	rows := rowsOf(&cfg) // 2613 to 10452 URLs/s
	svg, doc := renderSVG(t, cfg.Workload(), rows)
	var labels []string
	for _, tx := range doc.Texts {
		if strings.Contains(svg, `text-anchor="middle" fill="#555">`+tx.Body+`<`) {
			labels = append(labels, tx.Body)
		}
	}
	require.Equal(t, []string{"0", "2,000", "4,000", "6,000", "8,000", "10,000", "12,000"}, labels)
	require.Contains(t, svg, ">10,452<")
}

func TestSweepChartLegend(t *testing.T) {
	proxy := SweepRow{Setting: "workers=1", Kind: KindProxy, URLsPerSec: 100, RecordsOK: "true"}
	failed := SweepRow{Setting: "workers=2", Kind: KindProxy, URLsPerSec: 90, RecordsOK: "false"}
	direct := SweepRow{Setting: "direct", Kind: KindDirect, URLsPerSec: 300, RecordsOK: "-"}
	noWARC := SweepRow{Setting: "prefix=-", Kind: KindNoWARC, URLsPerSec: 200, RecordsOK: "-"}
	noWARCExit := noWARC
	noWARCExit.RecordsOK = "false" // the proxy did not exit cleanly
	for _, c := range []struct {
		name string
		rows []SweepRow
		want []string
	}{
		{"all passed", []SweepRow{direct, noWARC, proxy}, []string{"recording proxy", "baseline (direct, prefix=-)"}},
		{"no baselines", []SweepRow{proxy}, []string{"recording proxy"}},
		{"direct only", []SweepRow{direct}, []string{"baseline (direct)"}},
		{"a check failed", []SweepRow{direct, noWARC, proxy, failed}, []string{"recording proxy", "baseline (direct, prefix=-)", "records check failed"}},
		{"every check failed", []SweepRow{failed}, []string{"records check failed"}},
		{"a baseline failed", []SweepRow{direct, noWARCExit, proxy}, []string{"recording proxy", "baseline (direct)", "records check failed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinySweep(t)
			svg, _ := renderSVG(t, cfg.Workload(), c.rows)
			for _, name := range []string{"recording proxy", "baseline (direct, prefix=-)", "baseline (direct)", "records check failed"} {
				shown := strings.Contains(svg, ">"+esc(name)+"<")
				require.Equal(t, slices.Contains(c.want, name), shown, "legend entry %q", name)
			}
		})
	}
}

func TestWrapText(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  []string
	}{
		{"16KB bodies, concurrency 4, keep-alive, plain HTTP", 30, []string{"16KB bodies, concurrency 4,", "keep-alive, plain HTTP"}},
		{"warcproxy --max-conns 1000 --gzip-level 0", 28, []string{"warcproxy --max-conns 1000", "--gzip-level 0"}},
		{"short", 30, []string{"short"}},
		{"a phrase far longer than the width without any comma", 20, []string{"a phrase far longer", "than the width", "without any comma"}},
	} {
		t.Run(c.s, func(t *testing.T) {
			require.Equal(t, c.want, wrapText(c.s, c.width))
		})
	}
}
