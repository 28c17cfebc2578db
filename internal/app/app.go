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
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/rates"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/stats"
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
	// Dedup is the dedup index (nil with --dedup-db none), Stats the
	// per-bucket counters, CrawlLog the crawl log (nil without
	// --crawl-log-dir).
	Dedup *dedup.Index
	// CDX is the client of --cdxserver-dedup's CDX server, or nil; it is
	// asked after Dedup finds nothing.
	CDX      *dedup.CDX
	Stats    *stats.Tracker
	CrawlLog *crawllog.Logger

	spoolDir string
	handles  store.Handles
	indexer  *indexer // --cdxj, or nil
}

// indexer writes the CDXJ index of each closed WARC file, one file at a
// time, off the writer goroutines.
type indexer struct {
	files  chan string
	done   chan struct{}
	logger *slog.Logger
}

func newIndexer(logger *slog.Logger) *indexer {
	ix := &indexer{files: make(chan string, 1024), done: make(chan struct{}), logger: logger}
	go func() {
		defer close(ix.done)
		for path := range ix.files {
			out, err := cdxj.WriteBeside(path)
			if err != nil {
				ix.logger.Error("writing the CDXJ index failed", "file", path, "err", err)
				continue
			}
			ix.logger.Debug("wrote CDXJ index", "file", out)
		}
	}()
	return ix
}

// close waits (until ctx ends) for the files queued so far to be indexed.
func (ix *indexer) close(ctx context.Context) error {
	close(ix.files)
	select {
	case <-ix.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("CDXJ indexing unfinished: %w", ctx.Err())
	}
}

// onClose is the writer's OnClose hook: with --cdxj, closed files are
// queued for indexing.
func (a *App) onClose() func(string) {
	if !a.cfg.CDXJ {
		return nil
	}
	a.indexer = newIndexer(a.logger.With("component", "cdxj"))
	return func(path string) { a.indexer.files <- path }
}

// Option changes how New assembles the proxy; for tests.
type Option func(*options)

type options struct {
	writerFS writer.FS
}

// WithWriterFS makes the writer pool write through fs instead of the
// operating system's file layer, so tests can inject ENOSPC and EIO.
func WithWriterFS(fs writer.FS) Option { return func(o *options) { o.writerFS = fs } }

// New builds every component and binds the listening socket, so that
// errors (port in use, unreadable CA) surface before anything runs.
func New(cfg config.Config, version string, logger *slog.Logger, opts ...Option) (*App, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
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
	ln, err := net.Listen(listenNetwork(cfg.Address), net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "warcproxy_build_info",
		Help:        "Always 1; the labels say which build is running.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	buildInfo.Set(1)
	reg.MustRegister(buildInfo)
	a := &App{cfg: cfg, logger: logger, ln: ln, CA: ca, spoolDir: tmpDir, Registry: reg}
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	// The writer pool exists even with --prefix -: a request's
	// Warcprox-Meta can still name a warc-prefix. It opens no file until a
	// capture comes.
	poolPrefix := cfg.Prefix
	if poolPrefix == "-" {
		poolPrefix = writer.DefaultPrefix
	}
	// Files a crashed run left open-named are cut back to their last whole
	// record and closed before the pool writes into the directory; those a
	// live process holds (a second instance on the same --dir) are left alone.
	// If New fails from here on, undo what it built, in reverse order.
	built := false
	defer func() {
		if built {
			return
		}
		_ = a.closeBackends(context.Background())
		if a.Pool != nil {
			_ = a.closePool(context.Background())
		}
		if a.indexer != nil {
			close(a.indexer.files)
		}
		ln.Close()
	}()
	recovered, err := writer.Recover(cfg.Dir, logger.With("component", "writer"))
	if err != nil {
		return nil, err
	}
	onClose := a.onClose()
	if onClose != nil {
		// Recovered files are closed files too: index them.
		for _, f := range recovered.Files {
			if f.NewPath != "" {
				onClose(f.NewPath)
			}
		}
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
		MaxOpenFiles:     cfg.MaxOpenWARCs,
		SubdirPrefix:     cfg.SubdirPrefix,
		FS:               o.writerFS,
		OnClose:          onClose,
		Software:         "warcproxy/" + version,
		Port:             port,
		Registerer:       reg,
	}, logger.With("component", "writer"))
	if err != nil {
		return nil, err
	}
	if err := a.openBackends(port, version); err != nil {
		return nil, err
	}
	popts := proxy.Options{
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
		FetchTimeout:      cfg.FetchTimeout,
		MethodFilter:      cfg.MethodFilter,
		VerifyUpstreamTLS: cfg.VerifyUpstreamTLS,
		WARCVersion:       cfg.WARCVersion,
		Version:           version,
		Status:            a.status,
		Registerer:        reg,
		Metrics:           metricsHandler,

		DedupMinTextSize:    cfg.DedupMinTextSize,
		DedupMinBinarySize:  cfg.DedupMinBinarySize,
		DedupOnlyWithBucket: cfg.DedupOnlyWithBucket,
		BlackoutPeriod:      cfg.BlackoutPeriod,
	}
	// Typed nil pointers must not become non-nil interfaces.
	switch {
	case a.CDX != nil:
		popts.Dedup = &dedup.Layered{Local: a.Dedup, Remote: a.CDX}
	case a.Dedup != nil:
		popts.Dedup = a.Dedup
	}
	if a.Stats != nil {
		popts.Stats = a.Stats
	}
	if a.CrawlLog != nil {
		popts.CrawlLog = a.CrawlLog
	}
	popts.DenyPrivateTargets = cfg.DenyPrivateTargets
	popts.NoLocalEndpoints = cfg.MetricsAddress != ""
	if popts.ProxyAuth, err = proxyAuth(cfg); err != nil {
		return nil, err
	}
	if len(popts.ProxyAuth) == 0 && !isLoopback(cfg.Address) {
		logger.Warn("LISTENING ON A NON-LOOPBACK ADDRESS WITHOUT --proxy-auth: anyone who can reach this port can use the proxy, "+
			"fetch from your network through it and read /status; set --proxy-auth or --proxy-auth-file, or bind 127.0.0.1",
			"address", cfg.Address)
	}
	a.Proxy, err = proxy.New(popts, logger.With("component", "proxy"))
	if err != nil {
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
		host, _, _ := net.SplitHostPort(cfg.MetricsAddress)
		if a.mln, err = net.Listen(listenNetwork(host), cfg.MetricsAddress); err != nil {
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
	built = true
	return a, nil
}

// proxyAuth collects the accepted user:password pairs of --proxy-auth and
// --proxy-auth-file.
func proxyAuth(cfg config.Config) ([]string, error) {
	var pairs []string
	if cfg.ProxyAuth != "" {
		pairs = append(pairs, cfg.ProxyAuth)
	}
	if cfg.ProxyAuthFile != "" {
		data, err := os.ReadFile(cfg.ProxyAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--proxy-auth-file: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !strings.Contains(line, ":") {
				return nil, fmt.Errorf("--proxy-auth-file %s line %d: want user:password", cfg.ProxyAuthFile, i+1)
			}
			pairs = append(pairs, line)
		}
		if len(pairs) == 0 {
			return nil, fmt.Errorf("--proxy-auth-file %s: no user:password lines", cfg.ProxyAuthFile)
		}
	}
	return pairs, nil
}

// isLoopback reports whether the listen address is loopback only.
func isLoopback(address string) bool {
	if address == "localhost" {
		return true
	}
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

// openBackends opens the dedup index (and CDX client), the stats tracker
// and the crawl log.
func (a *App) openBackends(port int, version string) error {
	cfg := a.cfg
	dspec, err := store.Parse(cfg.DedupDB)
	if err != nil {
		return fmt.Errorf("--dedup-db: %w", err)
	}
	sspec, err := store.Parse(cfg.StatsDB)
	if err != nil {
		return fmt.Errorf("--stats-db: %w", err)
	}
	for _, s := range []store.Spec{dspec, sspec} {
		if s.Kind == store.Embedded {
			if dir := filepath.Dir(s.Path); dir != "" {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("creating the directory of %s: %w", s.Path, err)
				}
			}
		}
	}
	ds, err := dedup.Open(dspec, &a.handles)
	if err != nil {
		return fmt.Errorf("opening dedup database %s: %w", dspec.Raw, err)
	}
	if ds != nil {
		if a.Dedup, err = dedup.NewIndex(ds, dedup.Options{}, a.logger.With("component", "dedup"), a.Registry); err != nil {
			_ = ds.Close()
			return fmt.Errorf("dedup: %w", err)
		}
	}
	if cfg.CDXServerDedup != "" {
		a.CDX, err = dedup.NewCDX(dedup.CDXOptions{
			URL:           cfg.CDXServerDedup,
			Cookies:       cfg.CDXServerDedupCookies,
			MaxConcurrent: cfg.CDXServerDedupMaxThreads,
			Timeout:       cfg.CDXServerDedupTimeout,
			UserAgent:     "warcproxy/" + version,
		}, a.logger.With("component", "dedup", "backend", "cdx"), a.Registry)
		if err != nil {
			return fmt.Errorf("--cdxserver-dedup: %w", err)
		}
	}
	ss, err := stats.Open(sspec, &a.handles)
	if err != nil {
		return fmt.Errorf("opening stats database %s: %w", sspec.Raw, err)
	}
	if a.Stats, err = stats.NewTracker(ss, stats.Options{}, a.logger.With("component", "stats"), a.Registry); err != nil {
		if ss != nil {
			_ = ss.Close()
		}
		return fmt.Errorf("stats: %w", err)
	}
	if cfg.CrawlLogDir != "" {
		host, _ := os.Hostname()
		if a.CrawlLog, err = crawllog.New(cfg.CrawlLogDir, host, port, a.logger.With("component", "crawllog"), a.Registry); err != nil {
			return fmt.Errorf("crawl log: %w", err)
		}
	}
	cdxShown := ""
	if a.CDX != nil {
		cdxShown = a.CDX.URL()
	}
	a.logger.Info("databases", "dedup_db", dspec.Raw, "cdxserver_dedup", cdxShown, "stats_db", sspec.Raw, "crawl_log_dir", cfg.CrawlLogDir)
	return nil
}

// closeBackends flushes and closes what openBackends opened; ctx bounds
// the final flushes.
func (a *App) closeBackends(ctx context.Context) error {
	var errs []error
	if a.Dedup != nil {
		if err := a.Dedup.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing dedup index: %w", err))
		}
	}
	_ = a.CDX.Close() // cancels prefetches, releases idle connections; cannot fail
	if a.Stats != nil {
		if err := a.Stats.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing stats: %w", err))
		}
	}
	if a.CrawlLog != nil {
		if err := a.CrawlLog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing crawl log: %w", err))
		}
	}
	return errors.Join(errs...)
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
	if a.indexer != nil {
		// Every file is closed now: let their indexes be written.
		if err := a.indexer.close(drainCtx); err != nil {
			a.logger.Error("closing the CDXJ indexer", "err", err)
			errPool = errors.Join(errPool, err)
		}
	}
	// After the drain: every written capture has made its dedup save,
	// stats increment and crawl log line; flush them.
	errBackends := a.closeBackends(drainCtx)
	if errBackends != nil {
		a.logger.Error("closing databases", "err", errBackends)
	}
	_ = os.Remove(a.spoolDir) // only if empty: spill files are unlinked at creation
	a.rates.Stop()
	if a.msrv != nil {
		// Last, so a scrape can watch the drain.
		_ = a.msrv.Close()
	}
	if errPool == nil && errBackends == nil {
		a.logger.Info("shutdown complete: writer queue drained, WARC files closed, databases flushed")
	}
	return errors.Join(errProxy, errPool, errBackends)
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
	st["writer_failing"] = !ws.FailingSince.IsZero()
	st["writer_failing_since"] = nil
	st["writer_failing_error"] = nil
	if !ws.FailingSince.IsZero() {
		st["writer_failing_since"] = ws.FailingSince.UTC().Format(time.RFC3339Nano)
		st["writer_failing_error"] = ws.FailingError
	}
	st["writer_last_error"] = nil
	st["writer_last_error_time"] = nil
	if ws.LastWriteError != nil {
		st["writer_last_error"] = ws.LastWriteError.Error()
		st["writer_last_error_time"] = ws.LastWriteErrorAt.UTC().Format(time.RFC3339Nano)
	}
	st["writer_workers"] = a.cfg.WriterWorkers
	if ws.QueueCap > 0 {
		st["load"] = float64(ws.QueueLen) / float64(ws.QueueCap)
	}
	st["postfetch_chain"] = []map[string]any{{"processor": "WarcWriterProcessor", "queued_urls": ws.QueueLen}}
	if a.Dedup != nil {
		st["dedup"] = a.Dedup.Status()
	}
	if a.CDX != nil {
		st["cdxserver_dedup"] = a.CDX.Status()
	}
	if a.Stats != nil {
		st["stats"] = a.Stats.Status()
	}
}

// listenNetwork is "tcp4" for an IPv4 address: Go's "tcp" on 0.0.0.0 opens
// a dual-stack socket, which would also accept IPv6 clients an operator
// who wrote 0.0.0.0 (and firewalled IPv4) did not mean to serve. "::" and
// names keep "tcp".
func listenNetwork(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return "tcp4"
	}
	return "tcp"
}
