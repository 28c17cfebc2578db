package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SweepColumns are the columns of the sweep table and CSV.
var SweepColumns = []string{
	"setting", "URLs", "URLs/s", "MB/s", "WARC MB/s", "p50 ms", "p99 ms",
	"proxy CPU s", "peak RSS MB", "drain s", "records ok", "WARC KB/URL",
}

// cells formats a row; proxy-only figures are "-" on direct rows.
func (r SweepRow) cells() []string {
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	proxyOnly := func(s string) string {
		if r.Kind == KindDirect {
			return "-"
		}
		return s
	}
	warc, perURL := "-", "-"
	if r.Kind == KindProxy {
		warc, perURL = f(r.WARCMBps, 1), f(r.WARCKBPerURL, 1)
	}
	return []string{
		r.Setting, strconv.FormatInt(r.URLs, 10), f(r.URLsPerSec, 0), f(r.MBPerSec, 1), warc,
		f(r.P50, 2), f(r.P99, 2), proxyOnly(f(r.CPUSec, 2)), proxyOnly(f(r.PeakRSSMB, 0)),
		proxyOnly(f(r.DrainSec, 2)), r.RecordsOK, perURL,
	}
}

// TableWriter prints rows as aligned columns as they come; widths are
// fixed up front (settings as wide as the longest label given).
type TableWriter struct {
	w      io.Writer
	widths []int
}

// NewTableWriter prints the header; settingWidth is the widest setting
// label expected.
func NewTableWriter(w io.Writer, settingWidth int) (*TableWriter, error) {
	t := &TableWriter{w: w, widths: make([]int, len(SweepColumns))}
	for i, c := range SweepColumns {
		t.widths[i] = max(len(c), 8)
	}
	t.widths[0] = max(settingWidth, len(SweepColumns[0]))
	return t, t.line(SweepColumns)
}

// Write prints one row, and its note (why a check failed) under it.
func (t *TableWriter) Write(r SweepRow) error {
	if err := t.line(r.cells()); err != nil {
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
			fmt.Fprintf(&b, "%-*s", t.widths[i], c)
		} else {
			fmt.Fprintf(&b, "  %*s", t.widths[i], c)
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}

// WriteSweepCSV writes the header and the rows, plus kind and note
// columns for machines.
func WriteSweepCSV(w io.Writer, rows []SweepRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append(append([]string{}, SweepColumns...), "kind", "note")); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(append(r.cells(), r.Kind, r.Note)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
