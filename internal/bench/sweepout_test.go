package bench

import (
	"encoding/csv"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSweepCSV: one header line, then a line per row with the same
// columns, the workload in columns of its own on every row, and blank
// cells for what does not apply, with no comment lines a CSV reader
// would trip on.
func TestSweepCSV(t *testing.T) {
	cfg := variedSweep(t)
	cfg.Concurrency, cfg.Mode, cfg.Text, cfg.TLS = []int{50}, []string{ModeKeepAlive}, []bool{false}, []bool{false}
	rows := rowsOf(&cfg)
	var b strings.Builder
	require.NoError(t, WriteSweepCSV(&b, cfg.Workload(), rows))
	require.False(t, strings.HasPrefix(b.String(), "#"))
	recs, err := csv.NewReader(strings.NewReader(b.String())).ReadAll() // errors on a ragged line
	require.NoError(t, err)
	require.Equal(t, []string{
		"setting", "URLs", "URLs/s", "MB/s", "WARC MB/s", "p50 ms", "p99 ms", "proxy CPU s", "peak RSS MB", "drain s", "records ok", "WARC KB/URL",
		"kind", "note",
		"path", "text body", "concurrency", "client mode", "tls", "duration s", "n", "timeout s", "cpus",
		"max-conns", "writer-workers", "compression", "gzip-level", "zstd-level", "extra args",
	}, recs[0])
	require.Len(t, recs, 1+len(rows))

	col := func(rec []string, name string) string { return rec[slices.Index(recs[0], name)] }
	for i, rec := range recs[1:] {
		r := rows[i]
		require.Equal(t, r.Setting, col(rec, "setting"))
		require.Equal(t, "50", col(rec, "concurrency"), "held fixed, still on every row")
		require.Equal(t, "/delay/100", col(rec, "path"))
		require.Equal(t, "10", col(rec, "duration s"))
		switch r.Kind {
		case KindDirect:
			for _, c := range []string{"max-conns", "writer-workers", "extra args", "WARC MB/s", "proxy CPU s", "records ok"} {
				require.Empty(t, col(rec, c), "%s on a direct row", c)
			}
		case KindNoWARC:
			require.Equal(t, "--method-filter POST", col(rec, "extra args"))
			require.Empty(t, col(rec, "writer-workers"), "prefix=- records nothing")
		case KindProxy:
			require.Equal(t, "2", col(rec, "writer-workers"))
			require.Equal(t, "true", col(rec, "records ok"))
			require.Equal(t, map[string]bool{"gzip": true, "zstd": false}[col(rec, "compression")], col(rec, "gzip-level") != "", "%q", rec)
		}
	}
}

// TestSweepTableAligned: whatever the labels' lengths, every column
// starts and ends at the same place on every line; a note under a row
// does not count.
func TestSweepTableAligned(t *testing.T) {
	labels := []string{"direct", "prefix=-", strings.Repeat("x", 37), "workers=4 compression=zstd zstd-level=19 size=4MB text=true mode=new-conn tls=true c=1000"}
	var b strings.Builder
	tw, err := NewTableWriter(&b, labels)
	require.NoError(t, err)
	for i, l := range labels {
		r := SweepRow{Setting: l, Kind: KindProxy, URLs: 123456789, URLsPerSec: 33105, MBPerSec: 542.4, P99: 120000, RecordsOK: "true"}
		if i == 0 {
			r.Kind, r.RecordsOK = KindDirect, "-"
		}
		if i == 2 {
			r.RecordsOK, r.Note = "false", "0 records for 20 successful requests"
		}
		require.NoError(t, tw.Write(r))
	}
	var lines []string
	for l := range strings.Lines(b.String()) {
		if !strings.HasPrefix(l, "  ^ ") {
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
	}
	require.Len(t, lines, 1+len(labels))
	// Cells are runs of text with single spaces inside, two or more
	// between: the label starts where "setting" does, every figure ends
	// where its header does.
	cell := regexp.MustCompile(`\S+(?: \S+)*`)
	want := cell.FindAllStringIndex(lines[0], -1)
	require.Len(t, want, len(SweepColumns))
	for _, l := range lines[1:] {
		got := cell.FindAllStringIndex(l, -1)
		require.Len(t, got, len(want), "%q", l)
		require.Equal(t, 0, got[0][0], "%q", l)
		for i := 1; i < len(want); i++ {
			require.Equal(t, want[i][1], got[i][1], "column %q of %q", SweepColumns[i], l)
		}
	}
}
