package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Client modes.
const (
	ModeKeepAlive = "keepalive" // connections reused
	ModeNewConn   = "new-conn"  // a new connection per request
)

// Error kinds counted by Run.
const (
	ErrDial      = "dial"       // connecting to the origin or proxy failed
	ErrTimeout   = "timeout"    // --timeout passed before the body was read
	ErrTLS       = "tls"        // TLS handshake or verification failed
	ErrProxy     = "proxy"      // the proxy answered CONNECT with neither 2xx, 4xx nor 5xx
	ErrStatus4xx = "status_4xx" // a 4xx response
	ErrStatus5xx = "status_5xx" // a 5xx response
	ErrRead      = "read"       // the connection failed after it was made
)

// Target is one request to issue.
type Target struct {
	Method string // empty: RunConfig.Method
	URL    *url.URL
	Header http.Header // may be nil
	Body   []byte
}

// RunConfig says what load to make. Run stops when N requests are done
// (N > 0) or Duration has passed (Duration > 0), whichever comes first.
type RunConfig struct {
	Targets     []Target // issued round-robin
	Proxy       *url.URL // nil: direct
	Duration    time.Duration
	N           int64
	Concurrency int
	Method      string // GET or HEAD, for targets without their own
	Mode        string // ModeKeepAlive or ModeNewConn
	Timeout     time.Duration
	Insecure    bool           // skip TLS verification (MITM)
	RootCAs     *x509.CertPool // nil: the system's
	// HTTP2 offers h2 by ALPN on HTTPS connections (to the origin, or to a
	// MITM proxy inside its tunnels): requests to one host then share one
	// connection as streams. Plain http:// stays HTTP/1.1 (no h2c).
	HTTP2 bool
	// Progress, if not nil, gets a progress line every second (with a
	// carriage return, for a terminal) and a newline at the end.
	Progress io.Writer
}

// Validate checks the configuration.
func (c *RunConfig) Validate() error {
	var errs []error
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("no targets: give URLs, --urls or --replay"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be at least 1", c.Concurrency))
	}
	if c.N < 0 || c.Duration < 0 || (c.N == 0 && c.Duration == 0) {
		errs = append(errs, errors.New("give a positive -n or --duration"))
	}
	if c.Method != http.MethodGet && c.Method != http.MethodHead {
		errs = append(errs, fmt.Errorf("method %q: GET or HEAD", c.Method))
	}
	if c.Mode != ModeKeepAlive && c.Mode != ModeNewConn {
		errs = append(errs, fmt.Errorf("mode %q: %s or %s", c.Mode, ModeKeepAlive, ModeNewConn))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout must be positive"))
	}
	return errors.Join(errs...)
}

// Result is what Run measured.
type Result struct {
	Requests  int64            // completed, successful or not
	Successes int64            // 1xx-3xx responses read to the end
	Errors    map[string]int64 // by kind (ErrDial, ...)
	Status    map[int]int64    // responses by status code
	Protocols map[string]int64 // responses by protocol (HTTP/1.1, HTTP/2.0)
	BodyBytes int64
	Elapsed   time.Duration
	Latency   *Histogram // of requests that got a response
}

// worker holds one goroutine's tallies, merged at the end.
type worker struct {
	res Result
	buf []byte
}

// live counters for the progress line.
type live struct {
	requests, errors, bytes atomic.Int64
}

// Run makes the load and returns what it measured. Cancelling ctx stops it
// early (requests in flight are abandoned and not counted).
func Run(ctx context.Context, cfg RunConfig) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tr := newTransport(&cfg)
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     tr,
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	// issueCtx ends the issuing of new requests; ctx aborts those in flight.
	issueCtx, stopIssuing := context.WithCancel(ctx)
	defer stopIssuing()
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		issueCtx, cancel = context.WithTimeout(issueCtx, cfg.Duration)
		defer cancel()
	}

	var issued, seq atomic.Int64
	var lv live
	workers := make([]*worker, cfg.Concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{res: newResult(), buf: make([]byte, 64<<10)}
		workers[i] = w
		wg.Go(func() {
			for issueCtx.Err() == nil {
				if cfg.N > 0 && issued.Add(1) > cfg.N {
					return
				}
				t := &cfg.Targets[(seq.Add(1)-1)%int64(len(cfg.Targets))]
				w.do(ctx, client, &cfg, t, &lv)
			}
		})
	}
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		progressWG.Go(func() { progress(cfg.Progress, start, &lv, progressDone) })
	}
	wg.Wait()
	close(progressDone)
	progressWG.Wait()

	res := newResult()
	res.Elapsed = time.Since(start)
	for _, w := range workers {
		res.merge(&w.res)
	}
	return &res, nil
}

// newTransport is the client transport of cfg: its TLS trust, mode,
// timeouts and proxy.
func newTransport(cfg *RunConfig) *http.Transport {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: cfg.Insecure, RootCAs: cfg.RootCAs}, //nolint:gosec // --insecure is for MITM load tests
		TLSHandshakeTimeout:   cfg.Timeout,
		DisableCompression:    true, // count the bytes as sent
		DisableKeepAlives:     cfg.Mode == ModeNewConn,
		MaxIdleConns:          cfg.Concurrency * 2,
		MaxIdleConnsPerHost:   cfg.Concurrency,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		ForceAttemptHTTP2:     cfg.HTTP2,
	}
	if cfg.Proxy != nil {
		tr.Proxy = http.ProxyURL(cfg.Proxy)
		// A refused CONNECT (502 when the origin is down) is counted by
		// its status, as the same failure over plain HTTP would be.
		tr.OnProxyConnectResponse = func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
			if res.StatusCode/100 != 2 {
				return &connectError{status: res.StatusCode}
			}
			return nil
		}
	}
	return tr
}

func newResult() Result {
	return Result{Errors: map[string]int64{}, Status: map[int]int64{}, Protocols: map[string]int64{}, Latency: &Histogram{}}
}

func (r *Result) merge(o *Result) {
	r.Requests += o.Requests
	r.Successes += o.Successes
	r.BodyBytes += o.BodyBytes
	for k, v := range o.Errors {
		r.Errors[k] += v
	}
	for k, v := range o.Status {
		r.Status[k] += v
	}
	for k, v := range o.Protocols {
		r.Protocols[k] += v
	}
	r.Latency.Merge(o.Latency)
}

// do issues one request and tallies it; a request cut short by ctx is not
// counted.
func (w *worker) do(ctx context.Context, client *http.Client, cfg *RunConfig, t *Target, lv *live) {
	method := t.Method
	if method == "" {
		method = cfg.Method
	}
	var body io.Reader
	if len(t.Body) > 0 {
		body = bytes.NewReader(t.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL.String(), body)
	if err != nil {
		w.fail(ErrRead, lv)
		return
	}
	for k, vs := range t.Header {
		req.Header[k] = vs
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		var ce *connectError
		if errors.As(err, &ce) {
			w.res.Latency.Record(time.Since(start))
			w.res.Status[ce.status]++
			w.fail(statusKind(ce.status), lv)
			return
		}
		w.fail(classify(err), lv)
		return
	}
	n, err := io.CopyBuffer(io.Discard, onlyReader{resp.Body}, w.buf)
	_ = resp.Body.Close()
	w.res.BodyBytes += n
	lv.bytes.Add(n)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		kind := classify(err)
		if kind != ErrTimeout {
			kind = ErrRead
		}
		w.fail(kind, lv)
		return
	}
	w.res.Latency.Record(time.Since(start))
	w.res.Status[resp.StatusCode]++
	w.res.Protocols[resp.Proto]++
	if kind := statusKind(resp.StatusCode); kind != "" {
		w.fail(kind, lv)
		return
	}
	w.res.Requests++
	w.res.Successes++
	lv.requests.Add(1)
}

// statusKind is the error kind of a response status, "" for success.
func statusKind(code int) string {
	switch {
	case code >= 500:
		return ErrStatus5xx
	case code >= 400:
		return ErrStatus4xx
	default:
		return ""
	}
}

// connectError is a CONNECT the proxy answered with a non-2xx status.
type connectError struct{ status int }

func (e *connectError) Error() string {
	return fmt.Sprintf("proxy answered CONNECT with %d %s", e.status, http.StatusText(e.status))
}

func (w *worker) fail(kind string, lv *live) {
	w.res.Requests++
	w.res.Errors[kind]++
	lv.requests.Add(1)
	lv.errors.Add(1)
}

// onlyReader hides io.WriterTo, so that CopyBuffer uses our buffer.
type onlyReader struct{ io.Reader }

// classify names the kind of a transport error.
func classify(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimeout
	}
	var oe *net.OpError
	if errors.As(err, &oe) && (oe.Op == "dial" || oe.Op == "proxyconnect") {
		return ErrDial
	}
	var (
		verr  *tls.CertificateVerificationError
		rherr tls.RecordHeaderError
		aerr  tls.AlertError
		uerr  x509.UnknownAuthorityError
		herr  x509.HostnameError
	)
	if errors.As(err, &verr) || errors.As(err, &rherr) || errors.As(err, &aerr) || errors.As(err, &uerr) || errors.As(err, &herr) {
		return ErrTLS
	}
	var ce *connectError
	if errors.As(err, &ce) {
		return ErrProxy
	}
	return ErrRead
}
