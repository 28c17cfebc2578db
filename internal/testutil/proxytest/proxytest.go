// Package proxytest starts a real warcproxy (the same wiring as the
// command) on 127.0.0.1:0 for tests and benchmarks, and stops it with
// t.Cleanup.
package proxytest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/app"
	"github.com/warcproxy/warcproxy/internal/config"
)

// Proxy is a running warcproxy.
type Proxy struct {
	App    *app.App
	Config config.Config
	URL    *url.URL // http://127.0.0.1:port
	Dir    string   // WARC directory
	CAPool *x509.CertPool

	tb       testing.TB
	stopOnce sync.Once
	stop     chan struct{}
	served   chan error
	runErr   error
	errTaken bool // the test asked for the shutdown's error itself
}

// Start runs a proxy with test defaults (a temp dir, port 0, the test's CA);
// mutate, if not nil, adjusts the configuration first; opts go to app.New.
func Start(tb testing.TB, mutate func(*config.Config), opts ...app.Option) *Proxy {
	tb.Helper()
	dir := tb.TempDir()
	cfg := config.Default()
	cfg.Port = 0
	cfg.Dir = filepath.Join(dir, "warcs")
	cfg.CACert = filepath.Join(dir, "ca", "warcproxy-ca.pem")
	cfg.ShutdownTimeout = 10 * time.Second
	// The embedded database goes beside the WARCs, not into the package
	// directory the test runs in.
	cfg.DedupDB = "embedded:" + filepath.Join(dir, "warcproxy.db")
	cfg.StatsDB = cfg.DedupDB
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("proxytest: invalid config: %v", err)
	}
	level := slog.LevelWarn
	if os.Getenv("WARCPROXY_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: level}))
	a, err := app.New(cfg, "test", logger, opts...)
	if err != nil {
		tb.Fatalf("proxytest: starting proxy: %v", err)
	}
	pemData, err := os.ReadFile(a.CACertFile())
	if err != nil {
		tb.Fatalf("proxytest: reading CA certificate: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		tb.Fatalf("proxytest: bad CA certificate file")
	}
	p := &Proxy{
		App: a, Config: cfg, Dir: cfg.Dir, CAPool: pool, tb: tb,
		URL:    &url.URL{Scheme: "http", Host: a.Addr().String()},
		served: make(chan error, 1), stop: make(chan struct{}),
	}
	go func() { p.served <- a.Run(p.stop, nil) }()
	tb.Cleanup(func() { p.Stop() })
	return p
}

// Stop shuts the proxy down gracefully, as the first SIGTERM does:
// in-flight exchanges finish, the queue drains, WARC files are closed and
// renamed, all within the config's ShutdownTimeout; an incomplete
// shutdown fails the test. Safe to call twice.
func (p *Proxy) Stop() {
	if err := p.stopRun(); err != nil && !p.errTaken {
		p.tb.Errorf("proxytest: shutdown: %v", err)
	}
}

// Shutdown is Stop for a test that expects the shutdown to be cut short:
// it returns what the command would exit 1 for.
func (p *Proxy) Shutdown() error {
	p.errTaken = true
	return p.stopRun()
}

func (p *Proxy) stopRun() error {
	p.stopOnce.Do(func() {
		close(p.stop)
		p.runErr = <-p.served
	})
	return p.runErr
}

// Client returns an HTTP client that uses the proxy and trusts its CA.
// Keep-alive is on; extra trusted roots may be given.
func (p *Proxy) Client(extraRoots ...*x509.Certificate) *http.Client {
	roots := p.CAPool.Clone()
	for _, c := range extraRoots {
		roots.AddCert(c)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyURL(p.URL),
			TLSClientConfig:     &tls.Config{RootCAs: roots},
			MaxIdleConnsPerHost: 100,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       60 * time.Second,
	}
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}

// Settle waits until every exchange the proxy has started is written (the
// queue drained), then flushes dedup saves and stats, as warcprox's tests
// wait for its postfetch chain before they read stored stats.
func (p *Proxy) Settle() {
	p.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	// What /status says: exchanges started and not yet written.
	for p.App.Capture.Status()["captures_pending"] != 0 {
		if time.Now().After(deadline) {
			p.tb.Fatalf("proxytest: %v exchanges still unwritten after 30 s", p.App.Capture.Status()["captures_pending"])
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.App.Dedup != nil {
		if err := p.App.Dedup.Flush(ctx); err != nil {
			p.tb.Fatalf("proxytest: flushing dedup: %v", err)
		}
	}
	if p.App.Stats != nil {
		if err := p.App.Stats.Flush(ctx); err != nil {
			p.tb.Fatalf("proxytest: flushing stats: %v", err)
		}
	}
}
