package app

import (
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warcproxy/warcproxy/internal/rates"
)

// newRegistry holds this instance's metrics: Go and process collectors,
// and warcproxy_build_info. Each component registers its own.
func newRegistry(version string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "warcproxy_build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	reg.MustRegister(buildInfo)
	return reg
}

// registerRates adds the one-minute rate gauges warcprox's users read.
func registerRates(reg prometheus.Registerer, r *rates.Tracker) error {
	for _, g := range []struct {
		name, help string
		rate       func(rates.Rate) float64
	}{
		{"warcproxy_proxy_urls_per_second_1m", "URLs processed per second, averaged over the last minute (use rate() on warcproxy_proxy_captures_total in PromQL).",
			func(r rates.Rate) float64 { return r.URLsPerSec }},
		{"warcproxy_writer_bytes_per_second_1m", "WARC bytes written per second, averaged over the last minute (use rate() on warcproxy_writer_bytes_total in PromQL).",
			func(r rates.Rate) float64 { return r.WARCBytesPerSec }},
	} {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help},
			func() float64 { return g.rate(r.Over(time.Minute)) })); err != nil {
			return err
		}
	}
	return nil
}

func (a *App) metricsHandler() http.Handler {
	return promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry})
}

// newMetricsServer builds the server of --metrics-address (bound by
// listen): /metrics, /status and, with --pprof, the profiler.
func (a *App) newMetricsServer() {
	if a.mln == nil { // no --metrics-address
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metricsHandler())
	mux.Handle("/status", a.statusHandler())
	if a.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	a.msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
