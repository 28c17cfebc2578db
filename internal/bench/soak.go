package bench

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/warcproxy/warcproxy/internal/redisproc"
)

// SoakConfig says how to soak a proxy.
type SoakConfig struct {
	ProxyBin      string        // the warcproxy binary
	OutDir        string        // WARCs (OUT/warcs), CA, outputs
	RedisBin      string        // redis-server to use for --dedup-db/--stats-db; "": embedded stores
	Duration      time.Duration // of the load
	Concurrency   int
	Sample        time.Duration // between samples of the proxy
	SocketTimeout time.Duration // the proxy's --socket-timeout; /stall paths stall 2.5× as long
	Timeout       time.Duration // per request (client side); 0: 2m
	KeepWARCs     bool          // keep the WARC files (by default each is deleted once accounted for)
	// UploadStore is a versitygw binary: with it the proxy ships to that
	// store (--upload-to, --cdxj, --upload-webhook), the store is killed
	// and restarted half way, and the accounting reads what is in the
	// bucket, each WARC once its completion event has come.
	UploadStore string
	Logger      *slog.Logger // nil: discard
}

// Validate checks the configuration.
func (c *SoakConfig) Validate() error {
	var errs []error
	if c.ProxyBin == "" {
		errs = append(errs, errors.New("no proxy binary"))
	}
	if c.OutDir == "" {
		errs = append(errs, errors.New("no output dir"))
	}
	if c.Duration <= 0 || c.Sample <= 0 || c.SocketTimeout <= 0 {
		errs = append(errs, errors.New("--duration, --sample and --socket-timeout must be positive"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1", c.Concurrency))
	}
	return errors.Join(errs...)
}

// SoakResult is what a soak found.
type SoakResult struct {
	Config        SoakConfig
	Elapsed       time.Duration // of the load, stragglers included
	Requests      int64
	Bytes         int64
	KeepAlive     int64 // requests on reused connections' transport
	NewConn       int64
	HTTP, HTTPS   int64
	RedisAddr     string // "" without Redis
	RedisRestart  time.Duration
	ExitCode      int // the proxy's, -1 if killed
	ExitErr       error
	Drain         time.Duration // SIGTERM to exit
	WARCFiles     int64         // WARC files read for the accounting
	WARCBytes     int64         // their size on disk
	Samples       []SoakSample
	Trends        []Trend
	Accounting    *Accounting
	AccountingErr error       // reading the WARCs failed
	Upload        *SoakUpload // with UploadStore
}

// OK reports whether the accounting is exact, the proxy exited 0 and
// every trend is flat.
func (r *SoakResult) OK() bool {
	if r.AccountingErr != nil || r.Accounting == nil || !r.Accounting.Exact() || r.ExitCode != 0 {
		return false
	}
	if r.Upload != nil && !r.Upload.OK() {
		return false
	}
	for _, t := range r.Trends {
		if !t.Flat {
			return false
		}
	}
	return true
}

// Soak starts an origin, Redis (if asked) and the proxy, loads the proxy
// with mixed and faulty traffic, samples it, stops it and accounts for
// every exchange in its WARCs. Errors are failures to set up; what the
// soak finds is in the result.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	out, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	warcDir := filepath.Join(out, "warcs")
	if err := os.RemoveAll(warcDir); err != nil {
		return nil, fmt.Errorf("clearing %s: %w", warcDir, err)
	}
	if err := os.MkdirAll(warcDir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s: %w", warcDir, err)
	}
	srv, err := ListenOrigin(OriginConfig{Address: "127.0.0.1"}, logger.With("component", "origin"))
	if err != nil {
		return nil, fmt.Errorf("starting the origin: %w", err)
	}
	octx, stopOrigin := context.WithCancel(context.Background())
	var owg sync.WaitGroup
	owg.Go(func() { _ = srv.Serve(octx) })
	defer func() { stopOrigin(); owg.Wait() }()

	res := &SoakResult{Config: cfg, ExitCode: -1}
	var redis *redisproc.Server
	stores := "embedded:" + filepath.Join(warcDir, "warcproxy.db")
	if cfg.RedisBin != "" {
		redis, err = redisproc.Start(cfg.RedisBin, warcDir)
		if err != nil {
			return nil, err
		}
		defer redis.Kill()
		res.RedisAddr, stores = redis.Addr, redis.URL()
	}
	caFile := filepath.Join(out, "warcbench-ca.pem")
	args := []string{
		"--address", "127.0.0.1", "--port", "0", "--dir", warcDir, "--cacert", caFile,
		"--metrics-address", "127.0.0.1:0", "--socket-timeout", cfg.SocketTimeout.String(),
		"--dedup-db", stores, "--stats-db", stores,
	}
	var store *soakStore
	var env []string
	coll := newWARCCollector(warcDir, cfg.KeepWARCs)
	if cfg.UploadStore != "" {
		if store, err = startSoakStore(cfg.UploadStore, out, cfg.KeepWARCs); err != nil {
			return nil, err
		}
		defer store.close()
		args, env, coll = append(args, store.proxyArgs()...), store.srv.Env(), store.coll
	}
	p, err := startProxy(ctx, cfg.ProxyBin, args, env...)
	if err != nil {
		return nil, err
	}
	logger.Info("proxy started", "pid", p.cmd.Process.Pid, "port", p.port, "metrics", p.metrics, "stores", stores)
	load, err := newSoakLoad(&cfg, srv, p, caFile)
	if err != nil {
		_, _ = p.stop(drainTimeout)
		return nil, err
	}
	cctx, stopCollect := context.WithCancel(ctx)
	collected := make(chan error, 1)
	if store == nil {
		go func() { collected <- coll.run(cctx, cfg.Sample) }()
	} else {
		collected <- nil // the events feed the collector
	}
	soakRun(ctx, &cfg, load, p, redis, store, res, logger)

	res.Drain, res.ExitErr = p.stop(drainTimeout)
	stopCollect()
	collectErr := <-collected
	if ps := p.cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
	}
	if res.ExitErr != nil {
		logger.Warn("proxy did not exit cleanly", "err", res.ExitErr, "stderr", p.stderr.String())
	}
	res.Trends = Trends(res.Samples, cfg.Concurrency)
	switch {
	case collectErr != nil:
	case store != nil:
		var unannounced int64
		unannounced, collectErr = store.finish()
		res.Upload = store.result(closedLeft(warcDir), unannounced)
	default:
		collectErr = coll.collect(true)
	}
	res.AccountingErr = collectErr
	res.WARCFiles, res.WARCBytes = coll.files, coll.bytes
	res.Accounting = Account(load.outcomes, coll.captures, coll.unknown)
	return res, nil
}

// newSoakLoad builds the clients: keep-alive and new-conn, each for HTTP
// and for HTTPS through the MITM, trusting the proxy's CA.
func newSoakLoad(cfg *SoakConfig, srv *OriginServer, p *proxyProc, caFile string) (*soakLoad, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the proxy's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	l := &soakLoad{
		bases:    [2]string{"http://" + srv.HTTP.Addr().String(), "https://" + srv.HTTPS.Addr().String()},
		stall:    cfg.SocketTimeout * 5 / 2,
		outcomes: map[uint64]soakOutcome{},
	}
	for m, mode := range []string{ModeKeepAlive, ModeNewConn} {
		rc := RunConfig{
			Proxy: &url.URL{Scheme: "http", Host: "127.0.0.1:" + p.port}, Concurrency: cfg.Concurrency,
			Mode: mode, Timeout: cfg.Timeout, RootCAs: pool,
		}
		tr := newTransport(&rc)
		c := &http.Client{Transport: tr, Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		l.clients[m] = [2]*http.Client{c, c}
	}
	return l, nil
}

// storeDown is how long the object store is down half way through a soak
// with uploads.
const storeDown = 10 * time.Second

// soakRun makes the load while sampling the proxy every cfg.Sample and
// restarting Redis (if any) half way; it fills in res's load figures.
func soakRun(ctx context.Context, cfg *SoakConfig, load *soakLoad, p *proxyProc, redis *redisproc.Server, store *soakStore, res *SoakResult, logger *slog.Logger) {
	issueCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { load.run(ctx, issueCtx, cfg.Concurrency) })
	if redis != nil {
		wg.Go(func() {
			select {
			case <-time.After(cfg.Duration / 2):
			case <-issueCtx.Done():
				return
			}
			res.RedisRestart = time.Since(start)
			if err := redis.Restart(); err != nil {
				logger.Error("restarting redis", "err", err)
			} else {
				logger.Info("redis restarted", "at", res.RedisRestart.Round(time.Second))
			}
		})
	}
	if store != nil {
		wg.Go(func() {
			select {
			case <-time.After(cfg.Duration / 2):
			case <-issueCtx.Done():
				return
			}
			at := time.Since(start)
			if err := store.outage(at, storeDown); err != nil {
				logger.Error("restarting the object store", "err", err)
			} else {
				logger.Info("object store killed and restarted", "at", at.Round(time.Second), "down", storeDown)
			}
		})
	}
	metricsURL := "http://" + p.metrics + "/metrics"
	tick := time.NewTicker(cfg.Sample)
	defer tick.Stop()
	lastDone, last := int64(0), start
	// Samples cover the load, not the stragglers after it (their end
	// would look like a fall).
	for running := true; running; {
		select {
		case <-issueCtx.Done():
			running = false
		case now := <-tick.C:
			s := sampleProxy(ctx, p.cmd.Process.Pid, metricsURL)
			s.T = now.Sub(start)
			d := load.done.Load()
			s.URLsPerSec = float64(d-lastDone) / now.Sub(last).Seconds()
			lastDone, last = d, now
			res.Samples = append(res.Samples, s)
			logger.Debug("sample", "t", s.T.Round(time.Second), "rss_mb", s.RSSMB, "fds", s.FDs, "goroutines", s.Goroutines, "urls_per_sec", s.URLsPerSec)
		}
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Requests = load.done.Load()
	res.Bytes = load.bytes.Load()
	res.KeepAlive, res.NewConn = load.modes[0].Load(), load.modes[1].Load()
	res.HTTP, res.HTTPS = load.tlss[0].Load(), load.tlss[1].Load()
}
