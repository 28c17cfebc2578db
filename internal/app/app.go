// Package app assembles warcproxy from its configuration: CA, spooler,
// writer pool, dedup and stats stores, capture stage and proxy front end.
// cmd/warcproxy and the tests share it, so the tests run the same wiring
// that users do.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/rates"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/mitm"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/upload"
	"github.com/warcproxy/warcproxy/writer"
)

// App is a configured, not yet started warcproxy.
type App struct {
	cfg     config.Config
	version string
	started time.Time
	logger  *slog.Logger
	ln      net.Listener
	mln     net.Listener // --metrics-address, or nil
	msrv    *http.Server
	rates   *rates.Tracker
	ca      *mitm.CA
	spooler *spool.Spooler
	// registry holds every metric of this instance (Go and process
	// collectors included); /metrics serves it. Tests observe the
	// components through /status and /metrics, as operators do.
	registry *prometheus.Registry
	pool     *writer.Pool
	capture  *capture.Stage
	proxy    *proxy.Server
	// dedup is the dedup index (nil with --dedup-db none), cdx the client
	// of --cdxserver-dedup's CDX server (asked after dedup finds
	// nothing), stats the per-bucket counters, crawlLog the crawl log
	// (nil without --crawl-log-dir).
	dedup    *dedup.Index
	cdx      *dedup.CDX
	stats    *stats.Tracker
	crawlLog *crawllog.Logger

	authPairs []string // --proxy-auth and --proxy-auth-file
	spoolDir  string
	dirs      madeDirs // what this run created, to remove at shutdown when empty
	handles   store.Handles
	indexer   *cdxj.Indexer   // --cdxj, or nil
	shipper   *upload.Shipper // --upload-to, or nil
	notifier  upload.Notifier // --upload-webhook, or nil
	recovered map[string]bool // the files recovery closed at start
	jobs      jobTable        // --jobs
}

// Option changes how New assembles the proxy; for tests.
type Option func(*options)

type options struct {
	writerFS writer.FS
}

// WithWriterFS makes the writer pool write through fs instead of the
// operating system's file layer, so tests can inject ENOSPC and EIO.
func WithWriterFS(fs writer.FS) Option { return func(o *options) { o.writerFS = fs } }

// New binds the listening sockets, then builds every component, so that
// errors (port in use, unreadable CA) surface before anything runs, and a
// port in use before anything is created. cfg
// must have passed Validate, which checks all that can be checked before
// anything is created on disk.
func New(cfg config.Config, version string, logger *slog.Logger, opts ...Option) (*App, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	// What the configuration names on disk, read once, before anything
	// is created (the command has checked it already, to exit 2).
	pairs, err := cfg.ProxyAuthPairs()
	if err != nil {
		return nil, fmt.Errorf("--proxy-auth-file: %w", err)
	}
	a := &App{cfg: cfg, version: version, logger: logger, started: time.Now(), authPairs: pairs}
	store.RouteRedisLogs(logger.With("component", "redis"))
	built := false
	defer func() {
		if !built {
			a.undo()
		}
	}()
	if err := a.listen(); err != nil {
		return nil, err
	}
	if err := a.openJobs(); err != nil {
		return nil, err
	}
	if err := a.makeDirs(); err != nil {
		return nil, err
	}
	if err := a.openFiles(); err != nil {
		return nil, err
	}
	a.registry = newRegistry(version)
	if err := a.openWriter(o.writerFS); err != nil {
		return nil, err
	}
	if err := a.openBackends(); err != nil {
		return nil, err
	}
	if err := a.newPipeline(); err != nil {
		return nil, err
	}
	a.newMetricsServer()
	a.rates.Start() // stopped by Shutdown
	built = true
	return a, nil
}

// listen binds the proxy port and --metrics-address first: a port taken
// (the commonest start-up failure) leaves nothing created behind.
func (a *App) listen() error {
	var err error
	a.ln, err = net.Listen(listenNetwork(a.cfg.Address), net.JoinHostPort(a.cfg.Address, strconv.Itoa(a.cfg.Port)))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	if a.cfg.MetricsAddress != "" {
		host, _, _ := net.SplitHostPort(a.cfg.MetricsAddress)
		if a.mln, err = net.Listen(listenNetwork(host), a.cfg.MetricsAddress); err != nil {
			return fmt.Errorf("listening for metrics: %w", err)
		}
	}
	return nil
}

// makeDirs creates every directory the run writes to that is missing,
// before the components that would create them themselves, so that the
// run knows which it made (a.dirs) and shutdown removes only those.
func (a *App) makeDirs() error {
	a.spoolDir = a.cfg.TmpDir
	if a.spoolDir == "" {
		a.spoolDir = filepath.Join(a.cfg.Dir, ".spool")
	}
	for _, d := range runDirs(a.cfg, a.spoolDir) {
		if err := a.dirs.mkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("creating %s: %w", d.what, err)
		}
	}
	return nil
}

// runDir is a directory the run writes to.
type runDir struct {
	what, path string
	mode       os.FileMode
}

// runDirs are the directories the run writes to. The WARC and crawl log
// directories are readable by ingest jobs of other users (0755); the
// spool, the certificates and the CA are the proxy's alone (0700); a
// database's directory is 0755, its file 0600.
func runDirs(cfg config.Config, spoolDir string) []runDir {
	dirs := []runDir{
		{"CA dir", filepath.Dir(cfg.CACert), 0o700},
		{"WARC dir", cfg.Dir, 0o755},
		{"spool dir", spoolDir, 0o700},
	}
	if cfg.CertsDir != "" {
		dirs = append(dirs, runDir{"certs dir", cfg.CertsDir, 0o700})
	}
	if cfg.CrawlLogDir != "" {
		dirs = append(dirs, runDir{"crawl log directory", cfg.CrawlLogDir, 0o755})
	}
	for _, spec := range []string{cfg.DedupDB, cfg.StatsDB} {
		if s, err := store.Parse(spec); err == nil && s.Kind == store.Embedded {
			dirs = append(dirs, runDir{"the directory of " + s.Path, filepath.Dir(s.Path), 0o755})
		}
	}
	return dirs
}

// openFiles loads (or creates) the CA and opens the spool, in the
// directories makeDirs made.
func (a *App) openFiles() error {
	cfg := a.cfg
	var err error
	if a.ca, err = mitm.LoadOrCreateCA(cfg.CACert, cfg.CertsDir, a.logger.With("component", "ca")); err != nil {
		return err
	}
	if a.spooler, err = spool.New(a.spoolDir, cfg.TmpFileMaxMemory, cfg.SpoolMemory); err != nil {
		return err
	}
	return nil
}

// openWriter recovers the files a crashed run left open-named (cut back to
// their last whole record and closed before the pool writes into the
// directory; those a live process holds, a second instance on the same
// --dir, are left alone), then starts the writer pool. The pool exists
// even with --prefix -: a request's Warcprox-Meta can still name a
// warc-prefix. It opens no file until a capture comes.
func (a *App) openWriter(fs writer.FS) error {
	recovered, err := writer.Recover(a.cfg.Dir, a.logger.With("component", "writer"),
		writer.RecoverOptions{FinalNames: a.cfg.NoWARCOpenSuffix})
	if err != nil {
		return err
	}
	if a.cfg.CDXJ {
		a.indexer = cdxj.NewIndexer(a.logger.With("component", "cdxj"))
	}
	if err := a.openShipper(); err != nil {
		return err
	}
	onClose := a.closedHandler()
	// Recovered files are closed files too: index and ship them.
	if err := a.queueClosed(recovered); err != nil {
		return err
	}
	dict, err := a.cfg.ZstdDictionaryBytes()
	if err != nil {
		return fmt.Errorf("reading --zstd-dictionary: %w", err)
	}
	a.pool, err = writer.New(writerOptions(a.cfg, a.version, a.Addr().Port, dict, fs, onClose, a.registry),
		a.logger.With("component", "writer"))
	return err
}

// newPipeline builds the capture stage and the proxy front end.
func (a *App) newPipeline() error {
	if err := a.ca.Register(a.registry); err != nil {
		return err
	}
	if err := a.spooler.Register(a.registry); err != nil {
		return err
	}
	var err error
	if a.capture, err = capture.New(captureOptions(a), a.logger.With("component", "capture")); err != nil {
		return err
	}
	if a.proxy, err = proxy.New(proxyOptions(a), a.logger.With("component", "proxy")); err != nil {
		return err
	}
	if err := a.registerJobs(a.registry); err != nil {
		return err
	}
	for _, ln := range a.jobs.ports {
		a.proxy.ServePort(ln)
	}
	if len(a.authPairs) == 0 && !isLoopback(a.cfg.Address) {
		a.logger.Warn("LISTENING ON A NON-LOOPBACK ADDRESS WITHOUT --proxy-auth: anyone who can reach this port can use the proxy, "+
			"fetch from your network through it and read /status; set --proxy-auth or --proxy-auth-file, or bind 127.0.0.1",
			"address", a.cfg.Address)
	}
	a.rates = rates.New(a.rateSample)
	return registerRates(a.registry, a.rates)
}

// undo releases what a failed New built, in reverse order.
func (a *App) undo() {
	_ = a.closeBackends(context.Background())
	if a.pool != nil {
		_ = a.pool.Close(context.Background())
	}
	if a.notifier != nil {
		_ = a.notifier.Close()
	}
	a.removeDirs()
	if a.ln != nil {
		a.ln.Close()
	}
	if a.mln != nil {
		a.mln.Close()
	}
	closeAll(a.jobs.ports)
}

// isLoopback reports whether the listen address is loopback only.
func isLoopback(address string) bool {
	if address == "localhost" {
		return true
	}
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

// MetricsAddr is the --metrics-address listener's address, or nil.
func (a *App) MetricsAddr() net.Addr {
	if a.mln == nil {
		return nil
	}
	return a.mln.Addr()
}

func (a *App) rateSample() rates.Sample {
	return rates.Sample{URLs: a.capture.URLsProcessed(), WARCBytes: int64(a.pool.Stats().BytesWritten)}
}

// Addr is the bound proxy address.
func (a *App) Addr() *net.TCPAddr { return a.ln.Addr().(*net.TCPAddr) }

// CACertFile is the client copy of the CA certificate.
func (a *App) CACertFile() string { return mitm.CertOnlyPath(a.cfg.CACert) }
