// Package proxy is the recording proxy's front end: it accepts client
// connections (--max-conns), admits requests (authentication, Warcprox-Meta
// blocks and limits, a full writer queue), serves CONNECT tunnels
// (intercepting TLS with a leaf certificate from the CA), forwards each
// request upstream through the wire client while streaming the response to
// the client, and hands the finished exchange to the capture stage. It
// knows nothing of WARC files, dedup or stats: the stage behind the Sink
// interface does.
package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/internal/lograte"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/jobs"
	"github.com/warcproxy/warcproxy/mitm"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/wire"
	"github.com/warcproxy/warcproxy/wsrec"
)

// Sink is the capture stage as the front end uses it (capture.Stage).
type Sink interface {
	// CheckPrefix reports why a warc-prefix a client named cannot be
	// used (the writer's rule), before anything is fetched.
	CheckPrefix(prefix string) error
	// CheckLimits finds the first Warcprox-Meta limit a request has
	// reached, before anything is fetched.
	CheckLimits(ctx context.Context, uri string, meta *warcproxmeta.Meta) (*warcproxmeta.LimitReached, error)
	// Open starts an admitted exchange: archive decision, recorders.
	Open(ex *capture.Exchange)
	// Rerecord starts the recordings over for a retried request.
	Rerecord(ex *capture.Exchange)
	// Submit hands over a fetched exchange, which the stage finishes
	// (re-cutting a response whose chunked framing broke, see
	// capture.Exchange.BrokenFraming); Abandon one that got no response
	// (a no-op after Submit). FetchFailed logs why it got none.
	Submit(ex *capture.Exchange)
	Abandon(ex *capture.Exchange)
	FetchFailed(ex *capture.Exchange, kind string, err error)
	// WriteRecord writes a record a client sent (WARCPROX_WRITE_RECORD).
	WriteRecord(r *capture.Record, body io.Reader) error
	// OpenWebSocket is where the messages of the socket a submitted 101
	// handshake opened go; nil when the handshake was not archived.
	OpenWebSocket(ex *capture.Exchange) *capture.WebSocket
}

var _ Sink = (*capture.Stage)(nil)

// Backlog tells how long the writer queue has been full. The writer pool
// answers it (its guard is in internal/app: proxy never imports writer).
type Backlog interface {
	FullFor() time.Duration
}

// Options configure a Server. Zero durations disable the timeout.
type Options struct {
	CA      *mitm.CA
	Capture Sink
	Backlog Backlog
	// Prefix is the default WARC prefix; "-" proxies without archiving.
	Prefix string

	MaxConns        int
	ConnWaitTimeout time.Duration
	IdleTimeout     time.Duration
	HeaderTimeout   time.Duration
	MaxHeaderBytes  int64
	// HTTP2 offers h2 to clients in CONNECT tunnels, with at most
	// HTTP2MaxStreams streams open per connection (default 100).
	HTTP2           bool
	HTTP2MaxStreams int
	// QueueFullTimeout: new requests get a 503 once the writer queue has
	// been full this long.
	QueueFullTimeout time.Duration
	MaxResourceSize  int64
	// WebSocket: whether and how the messages of WebSockets are recorded;
	// Spooler holds their messages while they are joined.
	WebSocket WebSocketOptions
	Spooler   *spool.Spooler
	// FetchTimeout bounds a whole fetch, from the request to the last byte
	// of the response; past it the record is cut (WARC-Truncated: time).
	FetchTimeout time.Duration
	// Upstream configures the origin side (its Vet is the proxy's own
	// loop check).
	Upstream wire.Options
	// ProxyAuth, if not empty, holds the accepted "user:password" pairs:
	// requests to the proxy (CONNECT, plain proxy requests, /status and
	// /metrics on the proxy port) need Proxy-Authorization: Basic.
	ProxyAuth []string
	// Jobs, if not nil, is the job table in force at start (--jobs); see
	// SetJobs and jobs.go.
	Jobs *jobs.Table
	// MetricsAddress, if set, is where /status and /metrics are served
	// instead of the proxy port (--metrics-address, as bound): the proxy
	// port answers them 404 naming it.
	MetricsAddress string
	// Status and Metrics, if not nil, serve /status and /metrics on the
	// proxy port; Registerer, if not nil, gets the front end's metrics.
	Status     http.Handler
	Metrics    http.Handler
	Registerer prometheus.Registerer
}

// Server is the proxy's front end.
type Server struct {
	opts    Options
	logger  *slog.Logger
	metrics *metrics // nil without Options.Registerer
	up      *wire.Client
	tlsCfg  *tls.Config

	outer, inner  *http.Server
	ll            atomic.Pointer[limitListener]
	portsMu       sync.Mutex
	pendingPorts  []net.Listener // jobs' ports given before Serve
	innerLn       *chanListener
	addr          atomic.Pointer[net.TCPAddr] // set by Serve
	selfCheckWarn sync.Once                   // isSelfAddr's one log line

	baseCtx    context.Context
	cancelBase context.CancelFunc
	inflight   sync.WaitGroup

	splicesMu sync.Mutex
	splices   map[net.Conn]struct{}
	recording sync.WaitGroup // splices whose messages are recorded: shutdown waits for their last record
	wsMetrics *wsrec.Metrics // nil without Options.Registerer
	closing   atomic.Bool
	fresh     freshConns          // connections not yet heard from, closed at Shutdown
	meta      warcproxmeta.Parser // Warcprox-Meta, with the block rules' regexes compiled once

	active          atomic.Int64 // exchanges in forward
	uploads         atomic.Int64 // write-record requests in writeRecord
	authFailures    atomic.Int64
	authLog         lograte.EverySecond
	jobs            atomic.Pointer[jobs.Table]
	jobRequests     jobCounts
	clientErrors    atomic.Int64
	clientErrLog    lograte.EverySecond
	handshakeErrors atomic.Int64
	handshakeLog    lograte.EverySecond
	h2Conns         atomic.Int64
	h2Streams       atomic.Int64
}

// New validates opts and builds a Server; Serve starts it.
func New(opts Options, logger *slog.Logger) (*Server, error) {
	switch {
	case opts.CA == nil:
		return nil, errors.New("proxy: no CA")
	case opts.Capture == nil:
		return nil, errors.New("proxy: no capture stage")
	case opts.Backlog == nil:
		return nil, errors.New("proxy: no writer backlog")
	case opts.MaxConns < 1:
		return nil, errors.New("proxy: max conns must be at least 1")
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 4 << 20
	}
	if opts.HTTP2MaxStreams <= 0 {
		opts.HTTP2MaxStreams = 100
	}
	s := &Server{opts: opts, logger: logger, splices: make(map[net.Conn]struct{})}
	up := opts.Upstream
	up.Vet = s.selfTarget
	s.up = wire.NewClient(up)
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	if opts.Registerer != nil {
		var err error
		if s.metrics, err = newMetrics(s, opts.Registerer); err != nil {
			return nil, fmt.Errorf("proxy: registering metrics: %w", err)
		}
		if s.wsMetrics, err = wsrec.NewMetrics(opts.Registerer); err != nil {
			return nil, fmt.Errorf("proxy: registering websocket metrics: %w", err)
		}
	}
	s.tlsCfg = s.clientTLSConfig()
	s.outer, s.inner = s.httpServer(), s.httpServer()
	s.inner.ConnContext = withTunnel
	s.outer.ConnContext = s.withConnJobs
	s.jobs.Store(opts.Jobs)
	// No HTTP/2 on the plain port (neither h2c nor a preface); in tunnels
	// only when negotiated by ALPN (http2.go).
	s.outer.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	if opts.HTTP2 {
		s.inner.Protocols = new(http.Protocols)
		s.inner.Protocols.SetHTTP1(true)
		s.inner.Protocols.SetHTTP2(true)
		s.inner.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: opts.HTTP2MaxStreams}
	} else {
		s.inner.TLSNextProto = s.outer.TLSNextProto
	}
	return s, nil
}

// httpServer is one of the two net/http servers: the outer one for client
// connections, the inner one for the inside of CONNECT tunnels. Both have
// the same limits, so they hold inside tunnels too.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    int(s.opts.MaxHeaderBytes),
		ErrorLog:          s.httpErrorLog(),
		BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		ConnState:         s.fresh.track,
	}
}

// Serve accepts connections on ln until Shutdown; it returns
// http.ErrServerClosed after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.addr.Store(a)
	}
	ll := newLimitListener(ln, s.opts.MaxConns, s.opts.ConnWaitTimeout, s.logger)
	s.portsMu.Lock()
	s.ll.Store(ll)
	for _, p := range s.pendingPorts {
		ll.serveExtra(p)
	}
	s.pendingPorts = nil
	s.portsMu.Unlock()
	s.innerLn = newChanListener(ln.Addr())
	go func() { _ = s.inner.Serve(s.innerLn) }()
	return s.outer.Serve(servedListener{ll, s})
}

// ServePort accepts connections on ln too (a job's port, see jobs.go),
// into the same --max-conns slots, until ln is closed or the server shuts
// down.
func (s *Server) ServePort(ln net.Listener) {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	if ll := s.ll.Load(); ll != nil {
		ll.serveExtra(ln)
		return
	}
	s.pendingPorts = append(s.pendingPorts, ln)
}

// Shutdown stops accepting connections and waits, until ctx ends, for
// in-flight exchanges to finish and reach the capture stage. When ctx ends
// first, remaining connections are cut: what they had read is still
// submitted, marked truncated. Submitting can wait for room in a full
// writer queue, which only the writer's own shutdown ends; hard (the end
// of the shutdown budget) stops Shutdown waiting for those exchanges, so
// that the writer's shutdown can begin, and the error counts them. The
// error names what was cut, with the contexts' cause (context.Cause: a
// second signal or a deadline), and is nil when no exchange was.
func (s *Server) Shutdown(ctx, hard context.Context) error {
	s.closing.Store(true)
	s.closeSplices()
	var wg sync.WaitGroup
	var errOuter, errInner error
	wg.Add(2)
	go func() { defer wg.Done(); errOuter = s.outer.Shutdown(ctx) }()
	go func() { defer wg.Done(); errInner = s.inner.Shutdown(ctx) }()
	stop, closerDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(closerDone); s.fresh.closeSilentUntil(stop) }()
	wg.Wait()
	close(stop)
	<-closerDone
	err := errors.Join(errOuter, errInner)
	// Whatever is left ends now, truncated: request contexts end (which
	// closes origin connections) and client connections close.
	cut, uploads := s.active.Load(), s.uploads.Load()
	s.cancelBase()
	if err != nil {
		s.outer.Close()
		s.inner.Close()
	}
	if err != nil && ctx.Err() != nil {
		err = cutError(cut, uploads, context.Cause(ctx))
	}
	done := make(chan struct{})
	// Splices end once closeSplices closed their connections; the last
	// record of each recorded socket (marked disconnect) is queued before
	// the writer closes.
	go func() { s.inflight.Wait(); s.recording.Wait(); close(done) }()
	select {
	case <-done:
	case <-hard.Done():
		// Both may be ready: only exchanges still running are left behind.
		if n := s.active.Load() + s.uploads.Load(); n > 0 {
			err = errors.Join(err, fmt.Errorf("%s still in flight, not waited for (%w): "+
				"those the writer no longer takes are logged as not archived", exchanges(n), context.Cause(hard)))
		}
	}
	if ll := s.ll.Load(); ll != nil {
		ll.Close()
		ll.wg.Wait()
	}
	s.portsMu.Lock()
	for _, ln := range s.pendingPorts { // never served: Serve did not run
		ln.Close()
	}
	s.pendingPorts = nil
	s.portsMu.Unlock()
	s.up.CloseIdle()
	return err
}

// cutError says what closing the connections left at the shutdown deadline
// cut, for cause; nil when none carried an exchange or an upload
// (connections with nothing on them lose nothing).
func cutError(exchangesCut, uploadsCut int64, cause error) error {
	var errs []error
	if exchangesCut > 0 {
		errs = append(errs, fmt.Errorf("%s in flight cut (%w): their partial responses go to the writer, marked truncated",
			exchanges(exchangesCut), cause))
	}
	if uploadsCut > 0 {
		errs = append(errs, fmt.Errorf("%d %s uploads cut (%w): not written", uploadsCut, methodWriteRecord, cause))
	}
	return errors.Join(errs...)
}

// exchanges says how many, in words.
func exchanges(n int64) string {
	if n == 1 {
		return "1 exchange"
	}
	return fmt.Sprintf("%d exchanges", n)
}

// Addr is the address the proxy listens on (after Serve started).
func (s *Server) Addr() *net.TCPAddr { return s.addr.Load() }

// connStats reports connections holding a slot, waiting for one, and
// refused after waiting.
func (s *Server) connStats() (active, waiting, refused int64) {
	ll := s.ll.Load()
	if ll == nil {
		return 0, 0, 0
	}
	return int64(ll.active()), ll.waiting.Load(), ll.refused.Load()
}
