// Package app assembles warcproxy from its configuration: CA, spooler,
// writer pool and proxy server. cmd/warcproxy and the tests share it, so the
// tests run the same wiring that users do.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/rates"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/writer"
)

// App is a configured, not yet started warcproxy.
type App struct {
	cfg    config.Config
	logger *slog.Logger
	ln     net.Listener
	mln    net.Listener // --metrics-address, or nil
	msrv   *http.Server
	rates  *rates.Tracker
	CA     *proxy.CA
	// Registry holds every metric of this instance (Go and process
	// collectors included); /metrics serves it.
	Registry *prometheus.Registry
	Pool     *writer.Pool
	Proxy    *proxy.Server

	spoolDir string
}

// New builds every component and binds the listening socket, so that
// errors (port in use, unreadable CA) surface before anything runs.
func New(cfg config.Config, version string, logger *slog.Logger) (*App, error) {
	alg, err := digest.Parse(cfg.DigestAlgorithm)
	if err != nil {
		return nil, err
	}
	ca, err := proxy.LoadOrCreateCA(cfg.CACert, cfg.CertsDir, logger.With("component", "ca"))
	if err != nil {
		return nil, err
	}
	// The WARC directory is readable by ingest jobs of other users; the
	// spool inside it is the proxy's alone.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating WARC dir: %w", err)
	}
	tmpDir := cfg.TmpDir
	if tmpDir == "" {
		tmpDir = filepath.Join(cfg.Dir, ".spool")
	}
	sp, err := spool.New(tmpDir, cfg.TmpFileMaxMemory, cfg.SpoolMemory)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a := &App{cfg: cfg, logger: logger, ln: ln, CA: ca, spoolDir: tmpDir, Registry: reg}
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	// The writer pool exists even with --prefix -: a request's
	// Warcprox-Meta can still name a warc-prefix. It opens no file until a
	// capture comes.
	poolPrefix := cfg.Prefix
	if poolPrefix == "-" {
		poolPrefix = writer.DefaultPrefix
	}
	a.Pool, err = writer.New(writer.Options{
		Dir:              cfg.Dir,
		Prefix:           poolPrefix,
		FilenameTemplate: cfg.WARCFilename,
		Gzip:             cfg.Gzip,
		GzipLevel:        cfg.GzipLevel,
		WARCVersion:      cfg.WARCVersion,
		Digest:           alg,
		Base32:           cfg.Base32,
		Workers:          cfg.WriterWorkers,
		QueueSize:        cfg.QueueSize,
		QueueMaxBytes:    cfg.QueueMaxBytes,
		RolloverSize:     cfg.RolloverSize,
		RolloverIdle:     cfg.RolloverIdleTime,
		Software:         "warcproxy/" + version,
		Port:             port,
		Registerer:       reg,
	}, logger.With("component", "writer"))
	if err != nil {
		ln.Close()
		return nil, err
	}
	a.Proxy, err = proxy.New(proxy.Options{
		CA:                ca,
		Spooler:           sp,
		Queue:             a.Pool,
		Prefix:            cfg.Prefix,
		Digest:            alg,
		Base32:            cfg.Base32,
		MaxConns:          cfg.MaxConns,
		ConnWaitTimeout:   cfg.ConnWaitTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		HeaderTimeout:     cfg.HeaderTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		QueueFullTimeout:  cfg.QueueFullTimeout,
		MaxResourceSize:   cfg.MaxResourceSize,
		SocketTimeout:     cfg.SocketTimeout,
		MethodFilter:      cfg.MethodFilter,
		VerifyUpstreamTLS: cfg.VerifyUpstreamTLS,
		Version:           version,
		Status:            a.status,
		Registerer:        reg,
		Metrics:           metricsHandler,
	}, logger.With("component", "proxy"))
	if err != nil {
		_ = a.closePool(context.Background())
		ln.Close()
		return nil, err
	}
	a.rates = rates.New(a.rateSample)
	for _, g := range []struct {
		name, help string
		rate       func(rates.Rate) float64
	}{
		{"warcproxy_proxy_urls_per_second_1m", "URLs processed per second, averaged over the last minute (use rate() on warcproxy_proxy_captures_total in PromQL).",
			func(r rates.Rate) float64 { return r.URLsPerSec }},
		{"warcproxy_writer_bytes_per_second_1m", "WARC bytes written per second, averaged over the last minute (use rate() on warcproxy_writer_bytes_total in PromQL).",
			func(r rates.Rate) float64 { return r.WARCBytesPerSec }},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help},
			func() float64 { return g.rate(a.rates.Over(time.Minute)) }))
	}
	if cfg.MetricsAddress != "" {
		if a.mln, err = net.Listen("tcp", cfg.MetricsAddress); err != nil {
			_ = a.closePool(context.Background())
			ln.Close()
			return nil, fmt.Errorf("listening for metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", metricsHandler)
		mux.Handle("/status", a.Proxy.StatusHandler())
		if cfg.Pprof {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
		a.msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	a.rates.Start() // stopped by Shutdown
	return a, nil
}

// MetricsAddr is the --metrics-address listener's address, or nil.
func (a *App) MetricsAddr() net.Addr {
	if a.mln == nil {
		return nil
	}
	return a.mln.Addr()
}

func (a *App) rateSample() rates.Sample {
	return rates.Sample{URLs: a.Proxy.URLsProcessed(), WARCBytes: int64(a.Pool.Stats().BytesWritten)}
}

// Addr is the bound proxy address.
func (a *App) Addr() *net.TCPAddr { return a.ln.Addr().(*net.TCPAddr) }

// CACertFile is the client copy of the CA certificate.
func (a *App) CACertFile() string { return proxy.CertOnlyPath(a.cfg.CACert) }

// Serve runs the proxy until Shutdown; it returns nil after a shutdown.
func (a *App) Serve() error {
	a.logger.Info("warcproxy listening",
		"address", a.cfg.Address, "port", a.Addr().Port, "dir", a.cfg.Dir,
		"prefix", a.cfg.Prefix, "ca_cert", a.CACertFile(),
		"writer_workers", a.cfg.WriterWorkers, "max_conns", a.cfg.MaxConns, "pid", os.Getpid())
	if a.msrv != nil {
		a.logger.Info("serving /metrics and /status", "address", a.mln.Addr().String())
		go func() {
			if err := a.msrv.Serve(a.mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.logger.Error("metrics listener failed", "err", err)
			}
		}()
	}
	err := a.Proxy.Serve(a.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for in-flight exchanges (until ctx ends),
// then drains the writer queue and closes every WARC file. drainCtx bounds
// the drain; a second signal cancels it.
func (a *App) Shutdown(ctx, drainCtx context.Context) error {
	a.logger.Info("shutting down: finishing in-flight exchanges")
	errProxy := a.Proxy.Shutdown(ctx)
	if errProxy != nil {
		a.logger.Warn("in-flight exchanges cut short", "err", errProxy)
	}
	errPool := a.closePool(drainCtx)
	_ = os.Remove(a.spoolDir) // only if empty: spill files are unlinked at creation
	a.rates.Stop()
	if a.msrv != nil {
		// Last, so a scrape can watch the drain.
		_ = a.msrv.Close()
	}
	if errPool == nil {
		a.logger.Info("shutdown complete: writer queue drained, WARC files closed")
	}
	return errors.Join(errProxy, errPool)
}

func (a *App) closePool(ctx context.Context) error { return a.Pool.Close(ctx) }

func (a *App) status(st map[string]any) {
	st["rates_1min"] = a.rates.Over(time.Minute)
	st["rates_5min"] = a.rates.Over(5 * time.Minute)
	st["rates_15min"] = a.rates.Over(15 * time.Minute)
	ws := a.Pool.Stats()
	st["queued_urls"] = ws.QueueLen
	st["queue_max_size"] = ws.QueueCap
	st["warc_bytes_written"] = ws.BytesWritten
	st["captures_written"] = ws.CapturesWritten
	st["records_written"] = ws.RecordsWritten
	st["warc_files_open"] = ws.FilesOpen
	st["warc_files_closed"] = ws.FilesClosed
	st["writer_errors"] = ws.WriteErrors
	st["writer_workers"] = a.cfg.WriterWorkers
}
