package bench

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// variedSweep varies every load dimension and the compression, and fixes
// the rest, with a path, both -n and --duration, and extra args.
func variedSweep(t *testing.T) SweepConfig {
	cfg := tinySweep(t)
	cfg.Path, cfg.Size = "/delay/100", nil
	cfg.Text, cfg.Mode, cfg.TLS = []bool{false, true}, []string{ModeKeepAlive, ModeNewConn}, []bool{false, true}
	cfg.Concurrency = []int{1, 50}
	cfg.Duration, cfg.N, cfg.Timeout = 10*time.Second, 1000, 5*time.Second
	cfg.WriterWorkers, cfg.Compression, cfg.ZstdLevel = []int{2}, []string{"gzip", "zstd"}, []int{3, 19}
	cfg.ExtraArgs = []string{"--method-filter", "POST"}
	return cfg
}

func TestWorkloadTitleAndCaption(t *testing.T) {
	machine := func(timeout string) string {
		return fmt.Sprintf("request timeout %ss; origin, proxy and load on 127.0.0.1, %d CPUs", timeout, runtime.NumCPU())
	}
	for _, c := range []struct {
		name    string
		cfg     func(*testing.T) SweepConfig
		title   string
		caption []string
	}{
		{
			"workers varied",
			tinySweep,
			"URLs/s per setting: 16KB incompressible bodies, concurrency 4, keep-alive, plain HTTP, 50 requests per case",
			[]string{
				"proxy: warcproxy --max-conns 1000 --compression gzip --gzip-level 0",
				"varied (see the labels): writer-workers 1, 2",
				machine("30"),
			},
		},
		{
			"load varied",
			variedSweep,
			"URLs/s per setting: GET /delay/100, 10s or 1,000 requests per case, whichever ends first",
			[]string{
				"proxy: warcproxy --max-conns 1000 --writer-workers 2 --gzip-level 0 --method-filter POST",
				"varied (see the labels): text body false, true; concurrency 1, 50; client mode keepalive, new-conn; " +
					"tls false, true; compression gzip, zstd; zstd-level 3, 19",
				machine("5"),
			},
		},
		{
			"text bodies over HTTPS, new connections, for a duration",
			func(t *testing.T) SweepConfig {
				cfg := tinySweep(t)
				cfg.Text, cfg.TLS, cfg.Mode, cfg.N, cfg.Duration = []bool{true}, []bool{true}, []string{ModeNewConn}, 0, 20*time.Second
				cfg.Compression, cfg.WriterWorkers = []string{"none"}, []int{4}
				return cfg
			},
			"URLs/s per setting: 16KB text (compressible) bodies, concurrency 4, a new connection per request, " +
				"HTTPS through the MITM, 20s per case",
			[]string{"proxy: warcproxy --max-conns 1000 --writer-workers 4 --compression none", machine("30")},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg(t)
			wl := cfg.Workload()
			require.Equal(t, c.title, wl.Title())
			require.Equal(t, c.caption, wl.Caption())
		})
	}
}

// TestWorkloadCaseValues: each row has the values of its own case, and
// none for the settings that do not apply to its kind.
func TestWorkloadCaseValues(t *testing.T) {
	cfg := variedSweep(t)
	wl := cfg.Workload()
	g := loadGroup{text: true, tls: true, mode: ModeNewConn, concurrency: 50}
	zstd := proxySetting{maxConns: 1000, workers: 2, compression: "zstd", level: 19}
	load := map[string]string{
		"path": "/delay/100", "text body": "true", "concurrency": "50", "client mode": ModeNewConn, "tls": "true",
		"duration s": "10", "n": "1000", "timeout s": "5", "cpus": fmt.Sprint(runtime.NumCPU()),
	}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(load)
		maps.Copy(m, extra)
		return m
	}
	proxyFlags := with(map[string]string{"max-conns": "1000", "extra args": "--method-filter POST"})
	recording := maps.Clone(proxyFlags)
	maps.Copy(recording, map[string]string{"writer-workers": "2", "compression": "zstd", "zstd-level": "19"})
	for _, c := range []struct {
		kind string
		want map[string]string
	}{
		{KindDirect, load},
		{KindNoWARC, proxyFlags},
		{KindProxy, recording}, // a zstd row: no gzip-level
	} {
		t.Run(c.kind, func(t *testing.T) {
			require.Equal(t, c.want, wl.caseValues(c.kind, g, zstd))
		})
	}
}
