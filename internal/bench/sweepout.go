package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SweepColumns are the columns of the sweep table and CSV.
var SweepColumns = []string{
	"setting", "URLs", "URLs/s", "MB/s", "WARC MB/s", "p50 ms", "p99 ms",
	"proxy CPU s", "peak RSS MB", "drain s", "records ok", "WARC KB/URL",
}

// cells formats a row; figures that do not apply to its kind (proxy
// figures on direct rows, WARC figures on baselines) are na.
func (r SweepRow) cells(na string) []string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	proxyOnly := func(s string) string {
		if r.Kind == KindDirect {
			return na
		}
		return s
	}
	warc, perURL := na, na
	if r.Kind == KindProxy {
		warc, perURL = f(r.WARCMBps, 1), f(r.WARCKBPerURL, 1)
	}
	recordsOK := r.RecordsOK
	if recordsOK == "-" {
		recordsOK = na
	}
	return []string{
		r.Setting, strconv.FormatInt(r.URLs, 10), f(r.URLsPerSec, 0), f(r.MBPerSec, 1), warc,
		f(r.P50, 2), f(r.P99, 2), proxyOnly(f(r.CPUSec, 2)), proxyOnly(f(r.PeakRSSMB, 0)),
		proxyOnly(f(r.DrainSec, 2)), recordsOK, perURL,
	}
}

// TableWriter prints rows as aligned columns as they come: the setting
// column as wide as the widest label the sweep will make, the figures
// wide enough for any a sweep measures.
type TableWriter struct {
	w      io.Writer
	widths []int
}

// minFigureWidth fits 999,999,999 URLs, or a p99 of 2 minutes (120000.00 ms).
const minFigureWidth = 9

// NewTableWriter prints the header; labels are the setting labels to come
// (SweepConfig.SettingLabels).
func NewTableWriter(w io.Writer, labels []string) (*TableWriter, error) {
	t := &TableWriter{w: w, widths: make([]int, len(SweepColumns))}
	for i, c := range SweepColumns {
		t.widths[i] = max(len(c), minFigureWidth)
	}
	t.widths[0] = len(SweepColumns[0])
	for _, l := range labels {
		t.widths[0] = max(t.widths[0], utf8.RuneCountInString(l))
	}
	return t, t.line(SweepColumns)
}

// Write prints one row, and its note (why a check failed) under it.
func (t *TableWriter) Write(r SweepRow) error {
	if err := t.line(r.cells("-")); err != nil {
		return err
	}
	if r.Note != "" {
		_, err := fmt.Fprintf(t.w, "  ^ %s\n", r.Note)
		return err
	}
	return nil
}

func (t *TableWriter) line(cells []string) error {
	var b strings.Builder
	for i, c := range cells {
		if i == 0 {
			// A label the plan did not foresee still pads the rest.
			t.widths[0] = max(t.widths[0], utf8.RuneCountInString(c))
			b.WriteString(c + strings.Repeat(" ", t.widths[0]-utf8.RuneCountInString(c)))
		} else {
			fmt.Fprintf(&b, "  %*s", t.widths[i], c)
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}

// WriteSweepCSV writes the header and a line per row: the table's
// columns, kind and note, then the workload columns (Workload.Columns),
// the same on every row whether the sweep varied them or not, so that a
// spreadsheet or pandas can filter and group by any of them. A figure or
// setting that does not apply to a row is an empty cell, which pandas
// reads as NaN.
func WriteSweepCSV(w io.Writer, wl Workload, rows []SweepRow) error {
	cw := csv.NewWriter(w)
	cols := wl.Columns()
	if err := cw.Write(slices.Concat(SweepColumns, []string{"kind", "note"}, cols)); err != nil {
		return err
	}
	for _, r := range rows {
		line := append(r.cells(""), r.Kind, r.Note)
		for _, c := range cols {
			line = append(line, r.Case[c])
		}
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
