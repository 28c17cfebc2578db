package dedup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for the zero fields of CDXOptions. MaxConcurrent is warcprox's
// --cdxserver-dedup-max-threads default, Timeout its fixed request timeout
// and CacheSize its lookup cache.
const (
	DefaultCDXMaxConcurrent = 50
	DefaultCDXTimeout       = 2 * time.Second
	DefaultCDXCacheSize     = 1024
	DefaultCDXMaxAnswer     = 1 << 20
)

// CDXOptions configure a CDX client; a zero field takes its default.
type CDXOptions struct {
	// URL is the CDX API endpoint, as given to warcprox's
	// --cdxserver-dedup (e.g. https://web.archive.org/cdx/search). Query
	// parameters already in it are kept.
	URL string
	// Cookies, if set, is sent as the Cookie header of every request
	// (--cdxserver-dedup-cookies).
	Cookies string
	// MaxConcurrent caps the requests in flight (default 50); a lookup
	// waits for a free slot within its Timeout.
	MaxConcurrent int
	// Timeout bounds a whole lookup: waiting for a slot, connecting,
	// sending and reading the answer (default 2s).
	Timeout time.Duration
	// CacheSize is how many answers (each URL's newest capture, or none)
	// are remembered (default 1024); negative turns the cache off.
	CacheSize int
	// MaxAnswer caps the bytes read of one answer (default 1 MiB); a longer
	// one is an error.
	MaxAnswer int64
	// UserAgent is sent with every request (default "warcproxy").
	UserAgent string
}

func (o CDXOptions) withDefaults() (CDXOptions, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("cdx server URL %q: want http:// or https:// and a host", o.URL)
	}
	if o.MaxConcurrent < 0 || o.Timeout < 0 || o.MaxAnswer < 0 {
		return o, fmt.Errorf("dedup: negative CDX option in %+v", o)
	}
	if strings.ContainsAny(o.Cookies, "\r\n") {
		return o, errors.New("cdx server cookies must not contain line breaks")
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultCDXMaxConcurrent
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultCDXTimeout
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCDXCacheSize
	}
	if o.MaxAnswer == 0 {
		o.MaxAnswer = DefaultCDXMaxAnswer
	}
	if o.UserAgent == "" {
		o.UserAgent = "warcproxy"
	}
	return o, nil
}

// CDX looks payloads up in an existing archive through its CDX server, as
// warcprox's --cdxserver-dedup does: for a capture of URL with payload
// digest D it asks for the newest capture of URL that is not a revisit,
// and if that capture's digest is D the capture is a duplicate of it.
// Dedup buckets play no part and nothing is ever saved: the archive's index
// is read only.
//
// The request is warcprox's: GET URL?url=...&fl=timestamp,digest&
// filter=!mimetype:warc/revisit&limit=-1, whose answer is one line
// "TIMESTAMP DIGEST" (or none). Lines in pywb's CDXJ form
// ("URLKEY TIMESTAMP {json}") and NDJSON ({json} with timestamp and digest)
// are understood too.
//
// A CDX server that fails in any way (down, slow, 5xx, an answer that does
// not parse or is too long) makes the lookup a miss within Timeout: the
// capture is then written in full. Each failure is counted, and logged at
// most once per 10 s.
//
// Only SHA-1 digests can be compared: that is what CDX servers index. The
// digest may be base32 (the default) or hex, on either side.
type CDX struct {
	opts   CDXOptions
	base   *url.URL // as configured; each query replaces its query string
	extra  string   // the configured URL's own query parameters, as given
	shown  string   // the URL for logs and /status: password and parameter values masked
	client *http.Client
	slots  chan struct{}
	cache  *answerCache
	log    *slog.Logger
	m      *cdxMetrics

	logMu      sync.Mutex
	lastErrLog time.Time
	unlogged   int

	// Queries in flight by URL: a lookup joins the query a prefetch (or
	// another lookup) started for the same URL instead of sending its own.
	mu       sync.Mutex
	inflight map[string]*cdxCall
	circuit  circuit // stops asking a server that keeps failing
	// Prefetches run under ctx, which Close cancels before waiting for
	// them.
	ctx        context.Context
	stop       context.CancelFunc
	prefetches sync.WaitGroup

	hits, misses, skipped, errs atomic.Uint64
	cacheHits                   atomic.Uint64
	prefetched, prefetchBusy    atomic.Uint64
}

// NewCDX returns a client of the CDX server o.URL. logger is used as given
// (scope it with component=dedup); logger and reg may be nil.
func NewCDX(o CDXOptions, logger *slog.Logger, reg prometheus.Registerer) (*CDX, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	base, _ := url.Parse(o.URL)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil, // never an environment proxy
		DialContext:           dialer.DialContext,
		MaxIdleConns:          o.MaxConcurrent,
		MaxIdleConnsPerHost:   o.MaxConcurrent,
		MaxConnsPerHost:       o.MaxConcurrent,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
		ForceAttemptHTTP2:     true,
	}
	c := &CDX{
		opts:     o,
		base:     base,
		extra:    extraQuery(base.RawQuery),
		shown:    redactURL(base),
		client:   &http.Client{Transport: tr, CheckRedirect: noRedirects},
		slots:    make(chan struct{}, o.MaxConcurrent),
		log:      logger,
		inflight: make(map[string]*cdxCall),
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if o.CacheSize > 0 {
		c.cache = newAnswerCache(o.CacheSize)
	}
	c.m = newCDXMetrics(c)
	if reg != nil {
		if err := reg.Register(c.m); err != nil {
			return nil, fmt.Errorf("registering CDX dedup metrics: %w", err)
		}
	}
	return c, nil
}

// URL is the CDX server's URL for messages: a password and the values of
// its own query parameters (an API key, say) are masked.
func (c *CDX) URL() string { return c.shown }

// extraQuery is the configured URL's query without the parameters each
// lookup sets, in the order given.
func extraQuery(raw string) string {
	var kept []string
	for _, kv := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if k, err := url.QueryUnescape(k); kv == "" || (err == nil && (k == "url" || k == "fl" || k == "filter" || k == "limit")) {
			continue
		}
		kept = append(kept, kv)
	}
	return strings.Join(kept, "&")
}

// redactURL is u with its password and query values masked.
func redactURL(u *url.URL) string {
	r := *u
	if r.RawQuery != "" {
		parts := strings.Split(r.RawQuery, "&")
		for i, kv := range parts {
			if k, _, ok := strings.Cut(kv, "="); ok {
				parts[i] = k + "=xxxxx"
			}
		}
		r.RawQuery = strings.Join(parts, "&")
	}
	return r.Redacted()
}

// noRedirects makes a redirect an answer of its own (an error: not 200), so
// a lookup never leaves the configured server.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Close stops the prefetches in flight, waits for them and releases idle
// connections.
func (c *CDX) Close() error {
	if c != nil {
		c.stop()
		c.prefetches.Wait()
		c.client.CloseIdleConnections()
	}
	return nil
}

// sessionMarkers make a URL too volatile to look up (warcprox skips them).
var sessionMarkers = []string{"JSESSIONID=", "session=", "sess="}

// newest is what the CDX server says about a URL: its newest capture that
// is not a revisit (the query does not depend on the payload, which is why
// it can be sent before the payload is known).
type newest struct {
	ts     time.Time
	digest string // upper-case base32 SHA-1; "" if the index holds another kind
}

// cdxCall is one query in flight; done is closed once n and err are set.
type cdxCall struct {
	done chan struct{}
	n    *newest
	err  *cdxError
}

// skip reports whether uri is never looked up (no URL, or a session id in
// it, as warcprox skips them).
func skip(uri string) bool { return uri == "" || containsAny(uri, sessionMarkers) }

// Prefetch starts the query for uri in the background, so that the answer
// is there (or on its way) when the payload is known and Lookup is called:
// the proxy calls it when a request that will be archived arrives, and the
// CDX server's latency overlaps the fetch instead of following it. It never
// waits: when every request slot is busy it does nothing, and Lookup asks
// later. Its errors are counted by the Lookup that meets them.
func (c *CDX) Prefetch(uri string) {
	if skip(uri) || c.ctx.Err() != nil {
		return
	}
	if _, ok := c.cache.get(uri); ok {
		return
	}
	c.mu.Lock()
	if c.inflight[uri] != nil || !c.circuit.allow() {
		c.mu.Unlock()
		return
	}
	select {
	case c.slots <- struct{}{}:
	default:
		c.mu.Unlock()
		c.circuit.release()
		c.prefetchBusy.Add(1)
		return
	}
	c.prefetched.Add(1)
	call := &cdxCall{done: make(chan struct{})}
	c.inflight[uri] = call
	c.prefetches.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.prefetches.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.opts.Timeout)
		defer cancel()
		c.run(ctx, uri, call)
	}()
}

// Lookup asks the CDX server whether the newest capture of uri has the
// payload digest digest ("sha1:BASE32" or "sha1:hex", as the proxy writes
// WARC-Payload-Digest). A hit is an Entry with the URL and the capture's
// date (WARC-Date form) and no record ID, which a CDX server does not
// know. An error means the server could not say (it has been counted and
// logged): treat it as a miss. A query Prefetch started for uri is joined,
// not repeated.
func (c *CDX) Lookup(ctx context.Context, digest, uri string) (*Entry, error) {
	if skip(uri) {
		c.skipped.Add(1)
		return nil, nil
	}
	want, ok := sha1Base32(digest)
	if !ok {
		return nil, c.fail(uri, &cdxError{reasonDigest, fmt.Errorf("%q is not a SHA-1 digest", digest)})
	}
	n, ok := c.cache.get(uri)
	if ok {
		c.cacheHits.Add(1)
	} else {
		ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
		var err *cdxError
		if n, err = c.newest(ctx, uri); err != nil {
			return nil, c.fail(uri, err)
		}
	}
	if n == nil || n.digest != want {
		return c.answer(nil), nil
	}
	return c.answer(&Entry{URL: uri, Date: n.ts.Format("2006-01-02T15:04:05Z")}), nil
}

// newest returns the newest capture of uri (nil: none) from a query in
// flight or from a query of its own, within ctx.
func (c *CDX) newest(ctx context.Context, uri string) (*newest, *cdxError) {
	c.mu.Lock()
	call := c.inflight[uri]
	if call == nil {
		// A query that ended since the caller missed the cache has
		// cached its answer before leaving inflight.
		if n, ok := c.cache.get(uri); ok {
			c.mu.Unlock()
			return n, nil
		}
		if !c.circuit.allow() {
			c.mu.Unlock()
			return nil, &cdxError{reasonOpen, errors.New("the CDX server failed or timed out repeatedly; not asked for a while")}
		}
		call = &cdxCall{done: make(chan struct{})}
		c.inflight[uri] = call
		c.mu.Unlock()
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			c.circuit.release()
			c.finish(uri, call, nil, &cdxError{reasonBusy, fmt.Errorf("%d requests in flight: %w", c.opts.MaxConcurrent, ctx.Err())})
			return nil, call.err
		}
		c.run(ctx, uri, call)
		return call.n, call.err
	}
	c.mu.Unlock()
	select {
	case <-call.done:
		return call.n, call.err
	case <-ctx.Done():
		return nil, &cdxError{reasonTimeout, fmt.Errorf("waiting for the query in flight: %w", ctx.Err())}
	}
}

// run sends the query for call, holding a request slot, and publishes its
// answer.
func (c *CDX) run(ctx context.Context, uri string, call *cdxCall) {
	start := time.Now()
	line, err := c.query(ctx, uri)
	<-c.slots
	c.m.duration.Observe(time.Since(start).Seconds())
	var n *newest
	if err == nil && line != nil {
		ts, got, perr := parseCDXLine(line)
		if perr != nil {
			err = &cdxError{reasonBadAnswer, perr}
		} else {
			n = &newest{ts: ts}
			n.digest, _ = sha1Base32(got)
		}
	}
	if err != nil { // a nil *cdxError is not a nil error
		c.circuit.result(err)
	} else {
		c.circuit.result(nil)
	}
	c.finish(uri, call, n, err)
}

// finish publishes a call's answer, caching it unless it is an error.
func (c *CDX) finish(uri string, call *cdxCall, n *newest, err *cdxError) {
	if err == nil {
		c.cache.put(uri, n)
	}
	call.n, call.err = n, err
	c.mu.Lock()
	delete(c.inflight, uri)
	c.mu.Unlock()
	close(call.done)
}

// answer counts a definite answer.
func (c *CDX) answer(e *Entry) *Entry {
	if e == nil {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Status reports a few figures for the /status page.
func (c *CDX) Status() map[string]any {
	if c == nil {
		return map[string]any{"enabled": false}
	}
	return map[string]any{
		"enabled":    true,
		"server":     c.circuit.state(),
		"url":        c.shown,
		"hits":       c.hits.Load(),
		"misses":     c.misses.Load(),
		"skipped":    c.skipped.Load(),
		"errors":     c.errs.Load(),
		"cache_hits": c.cacheHits.Load(),
		"prefetched": c.prefetched.Load(),
		// Not sent ahead for want of a free request slot.
		"prefetch_busy": c.prefetchBusy.Load(),
	}
}
