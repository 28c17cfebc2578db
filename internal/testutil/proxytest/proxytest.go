// Package proxytest starts a real warcproxy (the same wiring as the
// command) on 127.0.0.1:0 for tests and benchmarks, reads its /status and
// /metrics as a monitoring client does, and stops it with t.Cleanup.
package proxytest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/warcproxy/warcproxy/internal/app"
	"github.com/warcproxy/warcproxy/internal/config"
)

// Proxy is a running warcproxy.
type Proxy struct {
	// App is the running wiring (its address, CA file, metrics address);
	// tests see its components only as operators do, through Status and
	// Metrics.
	App    *app.App
	Config config.Config
	URL    *url.URL // http://127.0.0.1:port
	Dir    string   // WARC directory
	CAPool *x509.CertPool

	tb       testing.TB
	log      *logBuffer // StartLogged
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
	return start(tb, mutate, nil, opts)
}

// StartLogged is Start with every log line, debug ones included, also kept
// for Log: a test can check what an operator would read (and that no
// secret is in it).
func StartLogged(tb testing.TB, mutate func(*config.Config), opts ...app.Option) *Proxy {
	tb.Helper()
	return start(tb, mutate, new(logBuffer), opts)
}

// Log is everything the proxy logged so far (StartLogged only).
func (p *Proxy) Log() string {
	if p.log == nil {
		p.tb.Fatalf("proxytest: Log needs StartLogged")
	}
	return p.log.String()
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(tb testing.TB, mutate func(*config.Config), log *logBuffer, opts []app.Option) *Proxy {
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
	var logTo io.Writer = testWriter{tb}
	if log != nil {
		level, logTo = slog.LevelDebug, io.MultiWriter(logTo, log)
	}
	logger := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level}))
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
		App: a, Config: cfg, Dir: cfg.Dir, CAPool: pool, tb: tb, log: log,
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
// queue drained, each capture's written step done: its dedup save is
// visible to lookups, its stats counted), as /status shows it.
func (p *Proxy) Settle() {
	p.tb.Helper()
	p.settle(false)
}

// SettleStores is Settle, then waits until the dedup saves and stats
// increments have reached their stores (the backends flush on their own:
// dedup every 0.1 s, stats every 0.5 s), as warcprox's tests wait for its
// postfetch chain before they read stored stats.
func (p *Proxy) SettleStores() {
	p.tb.Helper()
	p.settle(true)
}

func (p *Proxy) settle(stores bool) {
	p.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := p.Status(p.tb)
		left := map[string]any{"captures_pending": st["captures_pending"]}
		if d, ok := st["dedup"].(map[string]any); ok && stores { // not with --dedup-db none
			left["dedup.pending_saves"] = d["pending_saves"]
		}
		if s, ok := st["stats"].(map[string]any); ok && stores {
			left["stats.buckets_unflushed"] = s["buckets_unflushed"]
		}
		settled := true
		for _, v := range left {
			if v != float64(0) {
				settled = false
			}
		}
		if settled {
			return
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("proxytest: not settled after 30 s: %v", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Status returns the proxy's /status document, as a monitoring client
// reads it: from --metrics-address when it is set, otherwise from the
// proxy port in origin form, with the first --proxy-auth credentials when
// the proxy asks for them. JSON numbers are float64.
func (p *Proxy) Status(tb testing.TB) map[string]any {
	tb.Helper()
	resp := p.getLocal(tb, "/status", "")
	defer resp.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		tb.Fatalf("proxytest: reading /status: %v", err)
	}
	return st
}

// Metrics scrapes /metrics (from the same place as Status) and returns the
// metric families in the order served, as Gather would have them; for
// prometheus/testutil, wrap them in a prometheus.GathererFunc.
func (p *Proxy) Metrics(tb testing.TB) []*dto.MetricFamily {
	tb.Helper()
	// The protobuf exposition carries each family exactly as gathered.
	resp := p.getLocal(tb, "/metrics", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var mfs []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return mfs
		}
		if err != nil {
			tb.Fatalf("proxytest: reading /metrics: %v", err)
		}
		mfs = append(mfs, mf)
	}
}

// getLocal GETs one of the proxy's own endpoints and fails the test unless
// it answers 200. Each request has its own connection, so that none stays
// open to take a --max-conns slot or show in the connection counts.
func (p *Proxy) getLocal(tb testing.TB, path, accept string) *http.Response {
	tb.Helper()
	u := p.URL.String() + path
	if addr := p.App.MetricsAddr(); addr != nil {
		u = "http://" + addr.String() + path
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		tb.Fatalf("proxytest: %v", err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if p.App.MetricsAddr() == nil {
		if pairs, _ := p.Config.ProxyAuthPairs(); len(pairs) > 0 {
			req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(pairs[0])))
		}
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("proxytest: GET %s: %v", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tb.Fatalf("proxytest: GET %s: %s: %s", u, resp.Status, body)
	}
	return resp
}
