package bench

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/gobuild"
)

// proxyBin is the warcproxy binary TestMain builds for the sweep tests.
var proxyBin string

func TestMain(m *testing.M) {
	os.Exit(gobuild.RunWith(m, "github.com/warcproxy/warcproxy/cmd/warcproxy", &proxyBin))
}

func tinySweep(t *testing.T) SweepConfig {
	return SweepConfig{
		ProxyBin: proxyBin, OutDir: t.TempDir(), N: 50,
		MaxConns: []int{1000}, WriterWorkers: []int{1, 2}, Compression: []string{"gzip"}, GzipLevel: []int{0}, ZstdLevel: []int{3},
		Concurrency: []int{4}, Size: []string{"16KB"}, Text: []bool{false}, Mode: []string{ModeKeepAlive},
		TLS: []bool{false}, Baselines: true, Logger: discardLogger(),
	}
}

func TestSweepTinyGrid(t *testing.T) {
	ctx, _ := contextWithCancel(t)
	cfg := tinySweep(t)
	var streamed []string
	cfg.Row = func(r SweepRow) { streamed = append(streamed, r.Setting) }
	rows, err := Sweep(ctx, cfg)
	require.NoError(t, err)

	var settings, kinds []string
	for _, r := range rows {
		settings = append(settings, r.Setting)
		kinds = append(kinds, r.Kind)
		require.Equal(t, int64(50), r.URLs, "%s", r.Setting)
		require.Equal(t, int64(50), r.Requests, "%s", r.Setting)
		switch r.Kind {
		case KindProxy:
			require.Equal(t, "true", r.RecordsOK, "%s: %s", r.Setting, r.Note)
			require.Equal(t, int64(50), r.Records)
			require.Positive(t, r.WARCMBps)
			require.Positive(t, r.PeakRSSMB)
		default:
			require.Equal(t, "-", r.RecordsOK)
		}
	}
	require.Equal(t, []string{"direct c=4", "prefix=- c=4", "workers=1 c=4", "workers=2 c=4"}, settings)
	require.Equal(t, []string{KindDirect, KindNoWARC, KindProxy, KindProxy}, kinds)
	require.Equal(t, settings, streamed, "each row is reported as it finishes")

	// Checked WARC dirs are removed; the CA stays for the next sweep.
	left, err := filepath.Glob(filepath.Join(cfg.OutDir, "case-*"))
	require.NoError(t, err)
	require.Empty(t, left)

	require.Equal(t, settings, cfg.SettingLabels(), "the plan foresees every label")
	wl := cfg.Workload()
	var csvBuf strings.Builder
	require.NoError(t, WriteSweepCSV(&csvBuf, wl, rows))
	recs, err := csv.NewReader(strings.NewReader(csvBuf.String())).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 1+len(rows))
	require.Equal(t, slices.Concat(SweepColumns, []string{"kind", "note"}, wl.Columns()), recs[0])
	for i, r := range rows {
		require.Equal(t, r.Setting, recs[i+1][0])
		require.Equal(t, "4", r.Case["concurrency"], "%s", r.Setting)
	}

	var svg strings.Builder
	require.NoError(t, WriteSweepSVG(&svg, wl, rows))
	requireWellFormedXML(t, svg.String())
	for _, s := range settings {
		require.Contains(t, svg.String(), ">"+s+"<")
	}

	var table strings.Builder
	tw, err := NewTableWriter(&table, cfg.SettingLabels())
	require.NoError(t, err)
	for _, r := range rows {
		require.NoError(t, tw.Write(r))
	}
	require.Len(t, strings.Split(strings.TrimSpace(table.String()), "\n"), 1+len(rows))
	require.Contains(t, table.String(), "records ok")
}

func TestSweepRecordsCheckFails(t *testing.T) {
	ctx, _ := contextWithCancel(t)
	cfg := tinySweep(t)
	cfg.WriterWorkers = []int{1}
	cfg.Baselines = false
	cfg.N = 20
	cfg.ExtraArgs = []string{"--method-filter", "POST"} // GETs pass through unrecorded
	rows, err := Sweep(ctx, cfg)
	require.ErrorIs(t, err, ErrRecordsCheck)
	require.Len(t, rows, 1)
	require.Equal(t, "false", rows[0].RecordsOK)
	require.Equal(t, int64(20), rows[0].URLs)
	require.Zero(t, rows[0].Records)
	require.Contains(t, rows[0].Note, "0 records for 20 successful requests")
	// A failed case keeps its WARC dir to look at.
	left, err := filepath.Glob(filepath.Join(cfg.OutDir, "case-*"))
	require.NoError(t, err)
	require.Len(t, left, 1)
}

func TestSweepLabels(t *testing.T) {
	cfg := tinySweep(t)
	cfg.Compression = []string{"gzip", "none", "zstd"}
	cfg.GzipLevel = []int{1, 9}
	cfg.Size = []string{"4MB"}
	cfg.TLS = []bool{true}
	cfg.Defaults = DefaultSweepLabels
	l := labeler{cfg: &cfg}
	g := loadGroup{size: "4MB", tls: true, mode: ModeKeepAlive, concurrency: 50}
	for _, c := range []struct {
		kind string
		ps   *proxySetting
		want string
	}{
		{KindDirect, nil, "direct size=4MB tls=true"},
		{KindNoWARC, &proxySetting{1000, 1, "gzip", 1}, "prefix=- size=4MB tls=true"},
		{KindProxy, &proxySetting{1000, 2, "gzip", 9}, "workers=2 compression=gzip level=9 size=4MB tls=true"},
		{KindProxy, &proxySetting{1000, 2, "none", 0}, "workers=2 compression=none size=4MB tls=true"},
		{KindProxy, &proxySetting{1000, 2, "zstd", 3}, "workers=2 compression=zstd size=4MB tls=true"},
		{KindProxy, &proxySetting{1000, 2, "zstd", 19}, "workers=2 compression=zstd zstd-level=19 size=4MB tls=true"},
	} {
		require.Equal(t, c.want, l.label(c.kind, g, c.ps))
	}
}

func TestSweepValidate(t *testing.T) {
	cfg := tinySweep(t)
	cfg.N = 0
	cfg.Mode = []string{"http3"}
	cfg.Size = []string{"lots"}
	cfg.Concurrency = nil
	cfg.Compression = []string{"gzip", "lz4"}
	err := cfg.Validate()
	require.Error(t, err)
	for _, s := range []string{"-n or --duration", "http3", "lots", "concurrency", "lz4"} {
		require.ErrorContains(t, err, s)
	}
}

func TestParseStatCPU(t *testing.T) {
	line := "4242 (warc proxy) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 25 0 0 20 0 9 0 100 1000000 2000 18446744073709551615\n"
	ticks, ok := parseStatCPU(line)
	require.True(t, ok)
	require.Equal(t, int64(175), ticks)
	_, ok = parseStatCPU("garbage")
	require.False(t, ok)
}

func requireWellFormedXML(t *testing.T, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, s)
	}
}
