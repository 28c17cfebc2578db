package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return recs
}

func TestSweepCommand(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"sweep", "--proxy-bin", proxyBin, "--out", out, "-n", "30", "--concurrency", "4",
		"--writer-workers", "1,2", "--tls", "false,true",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	title := "URLs/s per setting: 16KB incompressible bodies, concurrency 4, keep-alive, 30 requests per case"
	for _, s := range []string{
		title, "proxy: warcproxy --max-conns 1000 --compression gzip --gzip-level 0",
		"varied (see the labels): tls false, true; writer-workers 1, 2",
		"direct tls=false c=4", "prefix=- tls=true c=4", "workers=2 tls=true c=4", "records ok",
	} {
		require.Contains(t, stdout.String(), s)
	}
	recs := readCSV(t, filepath.Join(out, "sweep.csv"))
	require.Len(t, recs, 1+2*4, "header, then per tls value: direct, prefix=-, two proxy rows")
	tls, n := slices.Index(recs[0], "tls"), slices.Index(recs[0], "n")
	for _, r := range recs[1:] {
		require.Equal(t, strconv.FormatBool(strings.Contains(r[0], "tls=true")), r[tls], "%q", r)
		require.Equal(t, "30", r[n], "%q", r)
	}
	svg, err := os.ReadFile(filepath.Join(out, "sweep.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), ">workers=1 tls=true c=4<")
	require.Contains(t, string(svg), ">URLs/s per setting: 16KB incompressible bodies, concurrency 4,")
}

// TestSweepCommandCompression: --compression gzip,zstd starts the proxy
// with each, and the rows report its throughput and bytes on disk (a
// text body, which both compress).
func TestSweepCommandCompression(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"sweep", "--proxy-bin", proxyBin, "--out", out, "-n", "40", "--concurrency", "4", "--writer-workers", "1",
		"--compression", "gzip,zstd,none", "--text", "true", "--baselines=false",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	recs := readCSV(t, filepath.Join(out, "sweep.csv"))
	require.Len(t, recs, 1+3)
	perURL := map[string]float64{}
	for _, r := range recs[1:] {
		require.Equal(t, "true", r[10], "records ok: %q", r)
		kb, err := strconv.ParseFloat(r[11], 64)
		require.NoError(t, err)
		mbps, err := strconv.ParseFloat(r[2], 64)
		require.NoError(t, err)
		require.Positive(t, mbps, "URLs/s of %s", r[0])
		for _, f := range strings.Fields(r[0]) {
			if strings.HasPrefix(f, "compression=") {
				perURL[f] = kb
			}
		}
	}
	t.Logf("WARC KB per URL: %v", perURL)
	require.Less(t, perURL["compression=gzip"], perURL["compression=none"]/2)
	require.Less(t, perURL["compression=zstd"], perURL["compression=none"]/2)
}

func TestSweepCommandRecordsCheckFails(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{
		"sweep", "--proxy-bin", proxyBin, "--out", out, "-n", "20", "--concurrency", "4",
		"--writer-workers", "1", "--extra-args", "--method-filter POST",
	}, &stdout, &stderr)
	require.Equal(t, 1, code, "%s\n%s", stdout.String(), stderr.String())
	require.Contains(t, stderr.String(), "records check failed")
	require.Contains(t, stdout.String(), "0 records for 20 successful requests")
	recs := readCSV(t, filepath.Join(out, "sweep.csv"))
	require.Len(t, recs, 1+3, "everything is written even when a check failed")
	last := recs[len(recs)-1]
	require.Equal(t, "false", last[10], "%q", last)
}

func TestSweepBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--proxy-bin", "/nonexistent/warcproxy"},
		{"--proxy-bin", proxyBin, "--writer-workers", "1,x"},
		{"--proxy-bin", proxyBin, "--gzip", "maybe"},
		{"--proxy-bin", proxyBin, "--compression", "lz4"},
		{"--proxy-bin", proxyBin, "--gzip", "true", "--compression", "zstd"},
		{"--proxy-bin", proxyBin, "--zstd-level", "high"},
		{"--proxy-bin", proxyBin, "--mode", "http3"},
		{"--proxy-bin", proxyBin, "--path", "delay/1"},
		{"--proxy-bin", proxyBin, "stray"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), append([]string{"sweep", "--out", t.TempDir()}, args...), &stdout, &stderr)
		require.Equal(t, 2, code, "%q: %s", args, stderr.String())
	}
}
