// Package proxy is the recording forward proxy: it serves plain HTTP proxy
// requests and CONNECT tunnels (intercepting TLS with its own CA), fetches
// from the origin with its own HTTP/1.1 client while recording the exact
// bytes on the wire, streams the response to the client, and hands each
// finished exchange to the WARC writer queue.
package proxy

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// Queue is where finished captures go: the writer pool.
type Queue interface {
	Enqueue(ctx context.Context, c *writer.Capture) error
	// FullFor is how long the queue has been continuously full.
	FullFor() time.Duration
}

// Options configure a Server. Zero durations disable the timeout.
type Options struct {
	CA      *CA
	Spooler *spool.Spooler
	Queue   Queue
	// Prefix is the default WARC prefix; "-" proxies without archiving.
	Prefix string
	Digest digest.Algorithm
	Base32 bool

	MaxConns         int
	ConnWaitTimeout  time.Duration
	IdleTimeout      time.Duration
	HeaderTimeout    time.Duration
	MaxHeaderBytes   int64
	QueueFullTimeout time.Duration
	MaxResourceSize  int64
	SocketTimeout    time.Duration
	// FetchTimeout bounds a whole fetch, from the request to the last byte
	// of the response; past it the record is cut (WARC-Truncated: time).
	FetchTimeout time.Duration
	// MethodFilter, if not empty, lists the only methods that are archived.
	MethodFilter      []string
	VerifyUpstreamTLS bool
	// DenyPrivateTargets refuses upstream addresses in loopback, private
	// and link-local ranges, checked at dial time.
	DenyPrivateTargets bool
	// ProxyAuth, if not empty, holds the accepted "user:password" pairs:
	// requests to the proxy (CONNECT, plain proxy requests, /status and
	// /metrics on the proxy port) need Proxy-Authorization: Basic.
	ProxyAuth []string
	// NoLocalEndpoints stops the proxy port from serving /status and
	// /metrics (they are on --metrics-address then).
	NoLocalEndpoints bool
	// WARCVersion ("1.0" or "1.1") is what the writer writes: dedup entries
	// keep WARC-Date as written, and revisit records name the version's
	// profile.
	WARCVersion string

	// Dedup, if set, turns duplicates into revisit records; Stats, if set,
	// counts captures per bucket and enforces Warcprox-Meta limits;
	// CrawlLog, if set, gets a line per fetch.
	Dedup               Deduper
	Stats               StatsTracker
	CrawlLog            CrawlLogger
	DedupMinTextSize    int64
	DedupMinBinarySize  int64
	DedupOnlyWithBucket bool
	BlackoutPeriod      time.Duration

	Version string
	// Status, if set, adds fields (writer figures) to /status.
	Status func(map[string]any)
	// Registerer, if not nil, gets the proxy's Prometheus metrics;
	// Metrics, if not nil, serves /metrics on the proxy port.
	Registerer prometheus.Registerer
	Metrics    http.Handler
}

// Server is the proxy.
type Server struct {
	opts    Options
	logger  *slog.Logger
	metrics *metrics // nil without Options.Registerer
	up      *upstream
	tlsCfg  *tls.Config

	outer, inner  *http.Server
	ll            atomic.Pointer[limitListener]
	innerLn       *chanListener
	addr          atomic.Pointer[net.TCPAddr] // set by Serve
	selfCheckWarn sync.Once                   // isSelfAddr's one log line
	prefetch      Prefetcher                  // opts.Dedup, when its lookups can start early

	baseCtx    context.Context
	cancelBase context.CancelFunc
	inflight   sync.WaitGroup

	splicesMu sync.Mutex
	splices   map[net.Conn]struct{}
	closing   atomic.Bool

	startTime time.Time
	active    atomic.Int64
	outcomes  [numOutcomes]atomic.Int64

	authFailures    atomic.Int64
	clientErrors    atomic.Int64
	clientErrLog    everySecond
	handshakeErrors atomic.Int64
	handshakeLog    everySecond

	activeSet   activeSet // exchanges not yet written, oldest first
	dedupErrors atomic.Int64
	dedupErrLog everySecond
	crawlLogErr everySecond
	reMu        sync.Mutex
	reCache     map[string]reEntry
}

// New validates opts and builds a Server; Serve starts it.
func New(opts Options, logger *slog.Logger) (*Server, error) {
	if opts.CA == nil {
		return nil, errors.New("proxy: no CA")
	}
	if opts.Spooler == nil {
		return nil, errors.New("proxy: no spooler")
	}
	if opts.Queue == nil {
		return nil, errors.New("proxy: no writer queue")
	}
	if opts.MaxConns < 1 {
		return nil, errors.New("proxy: max conns must be at least 1")
	}
	if opts.Digest == "" {
		opts.Digest = digest.SHA1
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 4 << 20
	}
	s := &Server{
		opts:   opts,
		logger: logger,

		splices:   make(map[net.Conn]struct{}),
		startTime: time.Now(),
	}
	s.up = newUpstream(opts.SocketTimeout, opts.VerifyUpstreamTLS, opts.DenyPrivateTargets, s.selfTarget)
	s.prefetch, _ = opts.Dedup.(Prefetcher)
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	if opts.Registerer != nil {
		var err error
		if s.metrics, err = newMetrics(s, opts.Registerer); err != nil {
			return nil, fmt.Errorf("proxy: registering metrics: %w", err)
		}
	}
	s.tlsCfg = &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
			tc, _ := hello.Conn.(*tunnelConn)
			if !validHostName(name) {
				name = ""
			}
			if tc != nil {
				// Runs in the goroutine that then serves the tunnel.
				tc.tun.sni = name
				if name == "" {
					name = tc.tun.host
				}
			}
			return opts.CA.Leaf(name)
		},
	}
	errLog := slog.NewLogLogger(logger.With("component", "http").Handler(), slog.LevelDebug)
	mk := func() *http.Server {
		return &http.Server{
			Handler:           s,
			ReadHeaderTimeout: opts.HeaderTimeout,
			IdleTimeout:       opts.IdleTimeout,
			MaxHeaderBytes:    int(opts.MaxHeaderBytes),
			ErrorLog:          errLog,
			BaseContext:       func(net.Listener) context.Context { return s.baseCtx },
		}
	}
	s.outer = mk()
	s.inner = mk()
	s.inner.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if sc, ok := c.(*servedConn); ok && sc.tun != nil {
			return context.WithValue(ctx, tunnelKey{}, sc.tun)
		}
		return ctx
	}
	// The inner server never negotiates h2 (not yet supported).
	s.inner.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	s.outer.TLSNextProto = s.inner.TLSNextProto
	return s, nil
}

// Serve accepts connections on ln until Shutdown; it returns
// http.ErrServerClosed after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.addr.Store(a)
	}
	ll := newLimitListener(ln, s.opts.MaxConns, s.opts.ConnWaitTimeout, s.logger)
	s.ll.Store(ll)
	s.innerLn = newChanListener(ln.Addr())
	go func() { _ = s.inner.Serve(s.innerLn) }()
	return s.outer.Serve(servedListener{ll, s})
}

// servedListener wraps every plain client connection in a servedConn.
type servedListener struct {
	net.Listener
	s *Server
}

func (l servedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &servedConn{Conn: c, s: l.s}, nil
}

// servedConn is a connection as the http.Servers see it: a plain client
// connection, or the (decrypted) client side of a CONNECT tunnel, with the
// tunnel it belongs to. It notices the errors net/http answers on its own,
// before any handler runs (400 for a malformed request, 431 for headers
// over --max-header-bytes...), so that they reach the log too.
type servedConn struct {
	net.Conn
	s   *Server
	tun *tunnel
	hf  hostFilterReader
}

// Read passes the client's bytes through the write-record Host filter
// (hostfix.go).
func (c *servedConn) Read(p []byte) (int, error) { return c.hf.read(c.Conn, p) }

// goErrorHeaders is how net/http writes its own error responses, in one
// Write; the proxy's own error responses look different (nosniff header).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *servedConn) Write(p []byte) (int, error) {
	if len(p) > 12 && len(p) < 512 && string(p[:9]) == "HTTP/1.1 " && (p[9] == '4' || p[9] == '5') &&
		bytes.Contains(p, []byte(goErrorHeaders)) {
		line, _, _ := bytes.Cut(p, []byte("\r\n"))
		c.s.noteClientError(c, string(line[9:]))
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes when the connection underneath can.
func (c *servedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// noteClientError counts a request net/http refused and logs it, at most
// once a second so that a hostile client cannot flood the log.
func (s *Server) noteClientError(c net.Conn, status string) {
	n := s.clientErrors.Add(1)
	if s.clientErrLog.allow() {
		s.logger.Info("rejected a malformed client request", "status", status,
			"remote", c.RemoteAddr().String(), "client_errors_total", n)
	}
}

// Shutdown stops accepting connections and waits, until ctx ends, for
// in-flight exchanges to finish and reach the writer queue. When ctx ends
// first, remaining connections are closed; what they had read is still
// queued, marked truncated.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.closeSplices()
	var wg sync.WaitGroup
	var errOuter, errInner error
	wg.Add(2)
	go func() { defer wg.Done(); errOuter = s.outer.Shutdown(ctx) }()
	go func() { defer wg.Done(); errInner = s.inner.Shutdown(ctx) }()
	wg.Wait()
	err := errors.Join(errOuter, errInner)
	if err != nil {
		s.cancelBase()
		s.outer.Close()
		s.inner.Close()
	}
	// Exchanges still running: let them reach the queue. After 10 s cut
	// their connections (they are written as truncated); after 5 s more,
	// give up on them and say so.
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cancelBase()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			err = errors.Join(err, errors.New("exchanges still in flight after the shutdown deadline"))
		}
	}
	s.cancelBase()
	if ll := s.ll.Load(); ll != nil {
		ll.Close()
		ll.wg.Wait()
	}
	s.up.closeIdle()
	return err
}

// Addr is the address the proxy listens on (after Serve started).
func (s *Server) Addr() *net.TCPAddr { return s.addr.Load() }

// URLsProcessed counts exchanges the proxy completed, archived or not.
func (s *Server) URLsProcessed() int64 {
	var n int64
	for o := range numOutcomes {
		n += s.outcomes[o].Load()
	}
	return n
}

// count records how an exchange ended.
func (s *Server) count(o outcome) { s.outcomes[o].Add(1) }

// ConnStats reports connections holding a slot, waiting for one, and
// refused after waiting.
func (s *Server) ConnStats() (active, waiting, refused int64) {
	ll := s.ll.Load()
	if ll == nil {
		return 0, 0, 0
	}
	return int64(ll.active()), ll.waiting.Load(), ll.refused.Load()
}

type tunnelKey struct{}

// target is where a request goes.
type target struct {
	scheme     string
	hostport   string // for dialing, port always present
	host       string
	requestURI string // origin-form
	tun        *tunnel
}

// authority is host[:port], without the scheme's default port.
func (t *target) authority() string {
	h := t.hostport
	if (t.scheme == "http" && strings.HasSuffix(h, ":80")) || (t.scheme == "https" && strings.HasSuffix(h, ":443")) {
		h = h[:strings.LastIndexByte(h, ':')]
	}
	return h
}

func (t *target) uri() string {
	if t.requestURI == "*" {
		return t.scheme + "://" + t.authority()
	}
	return t.scheme + "://" + t.authority() + escapeURIBytes(t.requestURI)
}

// headHasTransferEncoding reports whether the recorded response head in
// rec[start:end] has a Transfer-Encoding header (net/http drops it from
// HTTP/1.0 responses before we see them).
func headHasTransferEncoding(rec *recorder, start, end int64) bool {
	if end-start <= 0 || end-start > maxResponseHeadBytes {
		return false
	}
	head := make([]byte, end-start)
	if _, err := rec.buf.ReadAt(head, start); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.Contains(bytes.ToLower(head), []byte("\ntransfer-encoding:"))
}

// escapeURIBytes percent-encodes the bytes a URI may not hold raw (non-ASCII,
// controls, space), as browsers do, so that WARC-Target-URI reads the same in
// every WARC reader; the request record keeps the bytes as sent.
func escapeURIBytes(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tun, _ := r.Context().Value(tunnelKey{}).(*tunnel)
	if r.Method == "PRI" || r.ProtoMajor >= 2 {
		// An HTTP/2 connection preface, plain or inside a tunnel: never
		// forwarded or recorded as an HTTP/1.1 request.
		textError(w, http.StatusHTTPVersionNotSupported, "warcproxy: HTTP/2 is not supported yet; use HTTP/1.1")
		return
	}
	// Requests inside a tunnel were authorized with its CONNECT.
	if tun == nil && len(s.opts.ProxyAuth) > 0 && !s.authorized(r) {
		s.authFailures.Add(1)
		w.Header().Set("Proxy-Authenticate", `Basic realm="warcproxy"`)
		textError(w, http.StatusProxyAuthRequired, "warcproxy: proxy authentication required (Proxy-Authorization: Basic)")
		return
	}
	if r.Method == methodWriteRecord || r.Method == methodPutMeta {
		uri := r.RequestURI
		if tun != nil && strings.HasPrefix(uri, "/") {
			uri = (&target{scheme: tun.scheme, hostport: tun.authority, requestURI: uri}).uri()
		}
		s.writeRecord(w, r, uri)
		return
	}
	if r.Method == http.MethodConnect {
		if tun != nil {
			textError(w, http.StatusBadRequest, "warcproxy: CONNECT inside a CONNECT tunnel is not supported")
			return
		}
		s.handleConnect(w, r)
		return
	}
	var t target
	switch {
	case tun != nil:
		t = target{scheme: tun.scheme, hostport: tun.authority, host: tun.host, tun: tun}
		t.requestURI = r.RequestURI
		if !strings.HasPrefix(t.requestURI, "/") && t.requestURI != "*" {
			t.requestURI = originForm(r.RequestURI)
		}
	case r.URL.IsAbs():
		if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
			textError(w, http.StatusBadRequest, "warcproxy: unsupported URL scheme "+strconv.Quote(r.URL.Scheme))
			return
		}
		if r.URL.Host == "" {
			textError(w, http.StatusBadRequest, "warcproxy: request URL has no host")
			return
		}
		if p := r.URL.Port(); p != "" && !validPort(p) {
			textError(w, http.StatusBadRequest, "warcproxy: request URL has an invalid port "+strconv.Quote(p))
			return
		}
		t = target{scheme: r.URL.Scheme, requestURI: originForm(r.RequestURI)}
		t.hostport, t.host = withPort(r.URL.Host, t.scheme)
		if s.isSelf(t.hostport) {
			// http://proxy-address/status: answer here, never loop.
			s.serveLocal(w, r)
			return
		}
	default:
		s.serveLocal(w, r)
		return
	}
	if splice := s.forward(w, r, &t); splice != nil {
		splice()
	}
}

// originForm cuts "scheme://authority" off an absolute-form request target,
// keeping the rest exactly as the client sent it.
func originForm(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "/"
	}
	rest := raw[i+3:]
	j := strings.IndexAny(rest, "/?")
	if j < 0 {
		return "/"
	}
	if rest[j] == '?' {
		return "/" + rest[j:]
	}
	return rest[j:]
}

// withPort returns host:port (adding the scheme's default port) and host.
func withPort(authority, scheme string) (hostport, host string) {
	if h, p, err := net.SplitHostPort(authority); err == nil && p != "" {
		return net.JoinHostPort(h, p), h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]")
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(host, port), host
}

// isSelf reports whether hostport, as the client wrote it, names this
// proxy's own listening socket. Names other than localhost are not
// resolved here: the dialer checks the address they resolve to
// (selfTarget), so a name that points back at the proxy is refused there.
func (s *Server) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	// Another port is never the proxy: most requests stop here, before
	// anything allocates. "08000" is port 8000 too.
	addr := s.addr.Load()
	if n, err := strconv.Atoi(port); err != nil || addr == nil || n != addr.Port {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return addr.IP.IsLoopback() || addr.IP.IsUnspecified()
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	self, _ := s.isSelfAddr(netip.AddrPortFrom(ip, uint16(addr.Port)))
	return self
}

// interfaceAddrs lists the host's addresses (a variable for tests).
var interfaceAddrs = net.InterfaceAddrs

// errSelfTarget is a dial to the proxy's own listening socket.
var errSelfTarget = errors.New("refusing to connect to the proxy itself")

// selfTarget is the dialer's check on the address a target resolved to:
// connecting to the proxy's own socket would record the proxy answering
// itself (or loop). It fails closed when the host's addresses cannot be
// listed, saying why.
func (s *Server) selfTarget(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil
	}
	self, err := s.isSelfAddr(ap)
	switch {
	case err != nil:
		return fmt.Errorf("%w: cannot tell whether %s is this proxy: %v", errSelfTarget, ap, err)
	case self:
		return fmt.Errorf("%w (%s)", errSelfTarget, ap)
	}
	return nil
}

// isSelfAddr reports whether ap is an address of this proxy's listening
// socket. When the proxy listens on every interface, that takes the
// host's address list; an error says it could not be read (for example
// under a sandbox that forbids netlink sockets), and is logged once.
func (s *Server) isSelfAddr(ap netip.AddrPort) (bool, error) {
	addr := s.addr.Load()
	if addr == nil || int(ap.Port()) != addr.Port {
		return false, nil
	}
	// A zone ("[::1%lo]", "[fe80::1%eth0]") names the interface, not
	// another address: the same socket answers with or without it.
	ip := ap.Addr().Unmap().WithZone("")
	listen, _ := netip.AddrFromSlice(addr.IP)
	listen = listen.Unmap()
	// Connecting to 0.0.0.0 or :: reaches this host's own listeners.
	if ip == listen || ip.IsUnspecified() {
		return true, nil
	}
	if !listen.IsUnspecified() {
		return false, nil
	}
	if ip.IsLoopback() {
		return true, nil
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		err = fmt.Errorf("listing this host's addresses: %w", err)
		s.selfCheckWarn.Do(func() {
			s.logger.Error("cannot list this host's addresses: requests to this host's own addresses on the proxy's port are refused, since they may loop back to the proxy (under systemd, RestrictAddressFamilies needs AF_NETLINK)", "err", err)
		})
		return false, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if local, ok := netip.AddrFromSlice(n.IP); ok && local.Unmap() == ip {
				return true, nil
			}
		}
	}
	return false, nil
}

// warcproxMeta reads the crawler's Warcprox-Meta header, if any, and
// answers the request itself when the header is invalid (400), a limit is
// reached (420/430) or a block rule applies (403), in warcprox's order. It
// returns the request's policy, the WARC prefix to use ("-": don't archive)
// and whether to go on.
func (s *Server) warcproxMeta(w http.ResponseWriter, r *http.Request, uri string) (policy, string, bool) {
	prefix := s.opts.Prefix
	// The first header counts, as in warcprox.
	raw := r.Header.Get(warcproxmeta.HeaderName)
	if raw == "" {
		return s.newPolicy(nil, uri), prefix, true
	}
	meta, err := warcproxmeta.Parse(raw)
	if err == nil && meta.WarcPrefix != nil && !meta.DoNotArchive() {
		if perr := writer.CheckPrefix(*meta.WarcPrefix); perr != nil {
			err = fmt.Errorf("%w: field \"warc-prefix\": %v", warcproxmeta.ErrInvalid, perr)
		}
	}
	if err != nil {
		s.logger.Info("bad Warcprox-Meta header", "url", uri, "err", err)
		textError(w, http.StatusBadRequest, "warcproxy: "+err.Error())
		return policy{}, "", false
	}
	pol := s.newPolicy(meta, uri)
	if !s.enforceLimits(r.Context(), w, r, pol, uri) {
		return policy{}, "", false
	}
	if rule := meta.BlockingRule(uri); rule != nil {
		echo := asciiJSON(rule.Raw)
		w.Header().Set(warcproxmeta.HeaderName, `{"blocked-by-rule":`+echo+`}`)
		textError(w, http.StatusForbidden, "request rejected by warcprox: blocked by rule found in Warcprox-Meta header: "+echo)
		return policy{}, "", false
	}
	if meta.WarcPrefix != nil {
		prefix = *meta.WarcPrefix
	}
	return pol, prefix, true
}

// asciiJSON escapes everything but printable ASCII in compact JSON as
// \uXXXX (as Python's json.dumps does for warcprox), so that it is a valid
// header value whatever a compressed_blocks rule held.
func asciiJSON(raw []byte) string {
	var b strings.Builder
	for _, r := range string(raw) {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func (s *Server) methodArchived(method string) bool {
	if len(s.opts.MethodFilter) == 0 {
		return true
	}
	for _, m := range s.opts.MethodFilter {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

// forward fetches and records one exchange. For a 101 Switching Protocols
// answer it returns the function that runs the tunnel which follows, so that
// it runs outside the in-flight accounting that shutdown waits for.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, t *target) (splice func()) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.active.Add(1)
	defer s.active.Add(-1)

	if s.opts.QueueFullTimeout > 0 {
		if d := s.opts.Queue.FullFor(); d > s.opts.QueueFullTimeout {
			w.Header().Set("Retry-After", "5")
			textError(w, http.StatusServiceUnavailable, fmt.Sprintf(
				"warcproxy: the WARC writer queue has been full for %s (--queue-full-timeout %s); not fetching %s",
				d.Round(time.Millisecond), s.opts.QueueFullTimeout, t.uri()))
			return
		}
	}

	ex := &exchange{start: time.Now(), targetURI: t.uri(), method: r.Method, referer: r.Header.Get("Referer")}
	pol, prefix, ok := s.warcproxMeta(w, r, ex.targetURI)
	if !ok {
		return
	}
	meta := pol.meta
	ex.meta = meta
	ex.statsBuckets = pol.statsBuckets
	s.activeSet.add(&ex.active, ex.start)
	archive := prefix != "-" && s.methodArchived(r.Method)
	if archive {
		if s.prefetch != nil && (!s.opts.DedupOnlyWithBucket || (meta != nil && meta.DedupBuckets != nil)) {
			s.prefetch.Prefetch(ex.targetURI)
		}
		ex.req = newRecorder(s.opts.Spooler, s.opts.Digest)
		ex.res = newRecorder(s.opts.Spooler, s.opts.Digest)
	}
	if archive || s.opts.CrawlLog != nil {
		// The crawl log names the payload digest of what is not archived
		// too, as warcprox's does.
		ex.payload.h = s.opts.Digest.New()
	}
	queued := false
	defer func() {
		if !queued {
			ex.discard()
			s.activeSet.remove(&ex.active)
		}
	}()

	upgrade := isUpgrade(r.Header)
	hasBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	headBuf := getBuf()
	host := r.Host
	if host == "" {
		host = t.authority()
	}
	head := requestHead((*headBuf)[:0], r, host, t.requestURI, upgrade, hasBody)
	out := &outbound{method: r.Method, head: head, length: r.ContentLength}
	if hasBody {
		out.body = r.Body
		if s.opts.SocketTimeout > 0 {
			// A client that announces a body and stalls must not hold the
			// origin connection and its slot: the same inactivity timeout
			// as upstream reads.
			out.body = &clientBodyReader{r: r.Body, rc: http.NewResponseController(w), timeout: s.opts.SocketTimeout}
		}
		out.expect = strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	}
	if archive {
		out.reqRec, out.resRec = ex.req, ex.res
	}

	ctx := r.Context()
	var pre net.Conn
	if t.tun != nil && t.tun.authority == t.hostport {
		pre = t.tun.takePreconn()
	}
	var sni string
	if t.tun != nil {
		sni = t.tun.sni
	}
	var c *uconn
	var resp *http.Response
	var stop func() bool
	for attempt := 0; ; attempt++ {
		var err error
		c, err = s.up.get(ctx, t.scheme, t.hostport, sni, pre, attempt > 0)
		pre = nil
		if err == nil {
			if s.opts.FetchTimeout > 0 {
				c.setFetchEnd(ex.start.Add(s.opts.FetchTimeout))
			}
			// Close the origin connection if the client goes away or a
			// forced shutdown comes, so that nothing waits on it for the
			// socket timeout, in the head or in the body.
			conn := c.conn
			stop = context.AfterFunc(ctx, func() { conn.Close() })
			resp, ex.resStart, err = s.up.roundTrip(c, out)
			if err == nil {
				break
			}
			stop()
			c.conn.Close()
			// A connection that sat idle may have been closed by the
			// origin: send a request that is safe to repeat once more on a
			// new one.
			if attempt == 0 && !hasBody && safeMethod(r.Method) && isStale(c, err) && ctx.Err() == nil {
				if archive {
					ex.discard()
					ex.req = newRecorder(s.opts.Spooler, s.opts.Digest)
					ex.res = newRecorder(s.opts.Spooler, s.opts.Digest)
					out.reqRec, out.resRec = ex.req, ex.res
				}
				continue
			}
		}
		putBuf(headBuf)
		var cbe *clientBodyError
		if ctx.Err() != nil && !errors.As(err, &cbe) {
			// The client left (or a forced shutdown came) first: not the
			// origin's fault, and nobody to answer. Abort, so that net/http
			// does not answer an empty 200 for us either.
			s.logger.Debug("client gone before the response", "url", t.uri(), "err", err)
			panic(http.ErrAbortHandler)
		}
		s.upstreamError(w, r, ex.targetURI, meta, err)
		return
	}
	putBuf(headBuf)
	if resp.ProtoMajor == 1 && resp.ProtoMinor == 0 && ex.res != nil && headHasTransferEncoding(ex.res, ex.resStart, c.consumed()) {
		// RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message is faulty
		// framing; readers would de-chunk a body net/http passes raw.
		stop()
		c.conn.Close()
		s.upstreamError(w, r, ex.targetURI, meta, fmt.Errorf("%w: Transfer-Encoding in an HTTP/1.0 response", errUpstreamNotHTTP))
		return
	}
	ex.ip = c.ip
	ex.headEnd = c.consumed()
	ex.status = resp.StatusCode
	ex.contentType, ex.hasContentType = "", false
	if v := resp.Header.Values("Content-Type"); len(v) > 0 {
		ex.contentType, ex.hasContentType = v[0], true
		ex.mimeType = mimeTypeOf(v[0])
	}
	reusable := !resp.Close && !upgrade

	if resp.StatusCode == http.StatusSwitchingProtocols {
		stop()
		ex.resEnd = c.consumed()
		s.metrics.response(ex.resEnd - ex.resStart)
		ex.prefix = prefix
		queued = s.enqueue(ex, archive)
		return func() { s.splice(w, c, resp) }
	}

	h := w.Header()
	copyResponseHeaders(h, resp.Header)
	if meta != nil && meta.Accepts("capture-metadata") {
		// warcprox's form; the timestamp is the record's WARC-Date.
		h.Set(warcproxmeta.HeaderName, `{"capture-metadata":{"timestamp":"`+ex.start.UTC().Format("2006-01-02T15:04:05Z")+`"}}`)
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = nil // don't let net/http add one the origin did not send
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // nor sniff a Content-Type
	}
	if resp.ContentLength >= 0 && len(resp.TransferEncoding) == 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)

	ex.payload.r = resp.Body
	aborted, eof := s.copyBody(w, c, resp, ex)
	if eof && !aborted {
		// The origin's trailer fields, which net/http read with the last
		// chunk (warcprox relays them as they came).
		for k, vv := range resp.Trailer {
			if !hopByHop[k] && !notForClient[k] && k != "Content-Length" {
				h[http.TrailerPrefix+k] = vv
			}
		}
	}
	if !stop() {
		// ctx ended while we were reading: the connection is closed.
		reusable = false
		if ex.truncated == "" && !eof {
			ex.truncated = truncDisconnect
			aborted = true
		}
	}
	ex.resEnd = c.consumed()
	if ex.brokenFraming {
		ex.recutChunked(s.opts.Digest)
	}
	s.metrics.response(ex.resEnd - ex.resStart)
	if ex.truncated != "" || c.br.Buffered() > 0 {
		reusable = false
	}
	if reusable {
		s.up.put(c)
	} else {
		c.conn.Close()
	}
	ex.prefix = prefix
	queued = s.enqueue(ex, archive)
	if s.logger.Enabled(ctx, slog.LevelDebug) {
		s.logger.Debug("exchange", "method", r.Method, "url", ex.targetURI, "status", resp.StatusCode,
			"bytes", ex.resEnd-ex.resStart, "truncated", ex.truncated, "archived", archive && queued)
	}
	if aborted {
		// Do not end the response cleanly: the client must see that it
		// did not get the whole body.
		panic(http.ErrAbortHandler)
	}
	return nil
}

// safeMethod reports whether a request may be repeated automatically
// (RFC 9110 9.2.2: a proxy must not retry non-idempotent requests; like
// net/http, only safe methods are retried).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// copyBody streams the response body to the client, flushing whenever the
// origin has nothing more buffered, and stops at --max-resource-size. It
// reports whether the client's response must be aborted, and whether the
// body was read to its end.
func (s *Server) copyBody(w http.ResponseWriter, c *uconn, resp *http.Response, ex *exchange) (aborted, eof bool) {
	if resp.Body == http.NoBody {
		return false, true
	}
	flusher, _ := w.(http.Flusher)
	buf := getBuf()
	defer putBuf(buf)
	limit := s.opts.MaxResourceSize
	if limit > 0 && resp.ContentLength > limit {
		// Known to be too long: read exactly the limit.
	} else if limit > 0 {
		limit++ // unknown length: one byte past the limit shows it is longer
	}
	for {
		p := *buf
		if limit > 0 {
			left := limit - ex.payload.n
			if left <= 0 {
				ex.truncated = truncLength
				return true, false
			}
			if int64(len(p)) > left {
				p = p[:left]
			}
		}
		n, err := ex.payload.Read(p)
		if n > 0 {
			if _, werr := w.Write(p[:n]); werr != nil {
				// The client went away: keep what was read, stop fetching.
				if err == io.EOF {
					return true, true // the record is whole all the same
				}
				ex.truncated = truncDisconnect
				return true, false
			}
			if c.br.Buffered() == 0 && flusher != nil {
				flusher.Flush()
			}
		}
		if err == io.EOF {
			if s.opts.MaxResourceSize > 0 && ex.payload.n > s.opts.MaxResourceSize {
				ex.truncated = truncLength
				return true, true
			}
			return false, true
		}
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				ex.truncated = truncTime
			case errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
				ex.truncated = truncDisconnect
			default:
				// Broken framing (a bad chunk size line): the record keeps
				// the whole chunks before it (see recutChunked).
				ex.truncated = truncDisconnect
				ex.brokenFraming = true
			}
			s.logger.Info("upstream failed mid-body", "url", ex.targetURI, "read", ex.payload.n, "err", err)
			return true, false
		}
	}
}

// enqueue hands a finished exchange to the writer: as a response, as a
// revisit of an earlier capture of the same payload, or not at all
// (--prefix -, --method-filter, mime-type-filters, --blackout-period). It
// counts the capture in its stats buckets, and once it is written saves it
// for dedup and logs it in the crawl log. It reports whether the writer took
// ownership of the spools.
func (s *Server) enqueue(ex *exchange, archive bool) bool {
	ex.end = time.Now()
	if archive && s.mimeFiltered(ex.meta, ex.contentType, ex.hasContentType) {
		archive = false
	}
	var original *dedup.Entry
	dedupable := archive && s.shouldDedup(ex)
	var lookupIn, saveTo []string
	if ex.payload.h != nil {
		ex.payloadDigest = s.opts.Digest.Format(ex.payload.h.Sum(nil), s.opts.Base32)
	}
	if dedupable {
		lookupIn, saveTo = dedupBuckets(ex.meta)
		// Not the request's context: the capture is written even if the
		// client has left. The backends bound their own round trips.
		e, _, err := s.opts.Dedup.LookupURI(context.Background(), ex.payloadDigest, ex.targetURI, lookupIn)
		switch {
		case err != nil:
			s.dedupErrors.Add(1)
			if s.dedupErrLog.allow() {
				s.logger.Error("dedup lookup failed: writing the full response", "url", ex.targetURI, "err", err)
			}
		case e != nil && s.inBlackout(e, ex.targetURI):
			archive = false
		case e != nil:
			original = e
		}
	}
	wire := ex.resEnd - ex.resStart
	if !archive {
		s.count(notArchived)
		s.tally(ex.statsBuckets, stats.NotWritten, wire).Written()
		s.logCrawl(s.crawlEntry(ex, nil, false))
		return false
	}
	capture, err := ex.capture(ex.prefix, s.opts.Digest, s.opts.Base32)
	if err == nil && original != nil {
		err = s.toRevisit(ex, capture, original)
	}
	if err != nil {
		s.count(failed)
		s.logger.Error("capture not archived", "url", ex.targetURI, "err", err)
		return false
	}
	outcome, result := stats.New, archived
	if original != nil {
		outcome, result = stats.Revisit, revisit
	}
	tally := s.tally(ex.statsBuckets, outcome, wire)
	release := capture.Done
	capture.Done = func(err error) {
		// Last, so that once nothing is active every dedup save and stats
		// increment of the written captures has been made (Settle in tests,
		// seconds_behind).
		defer s.activeSet.remove(&ex.active)
		if err != nil {
			tally.Cancel()
			release(err)
			return
		}
		tally.Written()
		if s.metrics != nil {
			s.metrics.captured(ex.start)
		}
		if dedupable && original == nil && len(saveTo) > 0 {
			r := &capture.Records[0]
			s.opts.Dedup.Save(ex.payloadDigest, saveTo, dedup.Entry{ID: r.ID, URL: r.TargetURI, Date: s.warcDate(r.Date)})
		}
		s.logCrawl(s.crawlEntry(ex, capture, original != nil))
		release(nil)
	}
	// Wait for room however long it takes (back-pressure), even during a
	// forced shutdown: what was read is still written, marked truncated.
	// Only a pool that is closed refuses.
	if err := s.opts.Queue.Enqueue(context.Background(), capture); err != nil {
		tally.Cancel()
		s.count(failed)
		s.logger.Error("capture not archived: writer queue refused it", "url", ex.targetURI, "err", err)
		return false
	}
	s.count(result)
	return true
}

// toRevisit turns a capture's response record into a revisit of original:
// the block keeps the response's status line and headers only.
func (s *Server) toRevisit(ex *exchange, c *writer.Capture, original *dedup.Entry) error {
	r := &c.Records[0]
	headLen := ex.headEnd - ex.resStart
	if headLen <= 0 || headLen > r.BlockLength {
		return fmt.Errorf("revisit: response head of %d bytes out of range", headLen)
	}
	d, err := ex.res.digestRange(s.opts.Digest, s.opts.Base32, ex.resStart, headLen)
	if err != nil {
		return fmt.Errorf("digesting response head: %w", err)
	}
	r.Type = "revisit"
	r.BlockLength = headLen
	r.BlockDigest = d
	r.Fields = append(r.Fields, writer.Field{Name: "WARC-Profile", Value: s.revisitProfile()})
	// An original found through a CDX server has no record ID.
	if original.ID != "" {
		r.Fields = append(r.Fields, writer.Field{Name: "WARC-Refers-To", Value: original.ID})
	}
	r.Fields = append(r.Fields,
		writer.Field{Name: "WARC-Refers-To-Target-URI", Value: original.URL},
		writer.Field{Name: "WARC-Refers-To-Date", Value: original.Date},
	)
	return nil
}

// tally counts a capture in its stats buckets; nil without stats (a nil
// *stats.Tally's Written and Cancel do nothing).
func (s *Server) tally(buckets []string, o stats.Outcome, wire int64) *stats.Tally {
	if s.opts.Stats == nil {
		return nil
	}
	return s.opts.Stats.Tally(buckets, o, wire)
}

// upstreamError answers the client when the origin could not be reached or
// did not answer properly, and writes the fetch's crawl log line.
func (s *Server) upstreamError(w http.ResponseWriter, r *http.Request, uri string, meta *warcproxmeta.Meta, err error) {
	status, kind, label := s.noteUpstreamError(uri, err)
	textError(w, status, fmt.Sprintf("warcproxy: %s fetching %s: %v", kind, uri, err))
	s.logFailedFetch(r, uri, meta, label, err)
}

// noteUpstreamError counts and logs a fetch (or CONNECT) that got no
// response; it returns what classifyUpstreamError says about err.
func (s *Server) noteUpstreamError(target string, err error) (status int, kind, label string) {
	status, kind, label = classifyUpstreamError(err)
	s.metrics.upstreamError(label)
	s.logger.Info("upstream error", "target", target, "kind", kind, "err", err)
	return status, kind, label
}

// classifyUpstreamError gives the status for the client, a phrase for the
// message and the kind label for the metric.
func classifyUpstreamError(err error) (status int, phrase, kind string) {
	var dnsErr *net.DNSError
	var tlsErr *tlsError
	var ne net.Error
	var cbe *clientBodyError
	switch {
	case errors.Is(err, errPrivateTarget), errors.Is(err, errSelfTarget):
		return http.StatusForbidden, "refused", "denied"
	case errors.As(err, &cbe):
		if errors.As(err, &ne) && ne.Timeout() {
			return http.StatusRequestTimeout, "client stalled sending the request body", "client"
		}
		return http.StatusBadRequest, "client error", "client"
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return http.StatusGatewayTimeout, "DNS timeout", "dns"
		}
		return http.StatusBadGateway, "DNS lookup failed", "dns"
	case errors.As(err, &tlsErr):
		if errors.As(err, &ne) && ne.Timeout() {
			return http.StatusGatewayTimeout, "TLS handshake timeout", "timeout"
		}
		return http.StatusBadGateway, "TLS handshake failed", "tls"
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusGatewayTimeout, "upstream timeout", "timeout"
	case errors.Is(err, errResponseHeadTooLarge), errors.Is(err, errUpstreamNotHTTP), errors.Is(err, errTooManyInterim):
		return http.StatusBadGateway, "bad upstream response", "bad_response"
	case strings.Contains(err.Error(), "connection refused"):
		return http.StatusBadGateway, "connection refused", "refused"
	}
	return http.StatusBadGateway, "upstream error", "other"
}

func textError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// splice hands a 101 Switching Protocols exchange over to a byte tunnel
// between client and origin (WebSocket). Only the handshake is recorded.
func (s *Server) splice(w http.ResponseWriter, c *uconn, resp *http.Response) {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		c.conn.Close()
		return
	}
	c.rd.sink, c.wr.sink = nil, nil
	c.rd.timeout, c.wr.timeout = 0, 0
	_ = c.conn.SetDeadline(time.Time{})
	_ = client.SetDeadline(time.Time{})
	if !s.track(client, c.conn) {
		client.Close()
		c.conn.Close()
		return
	}
	defer s.untrack(client, c.conn)
	var head strings.Builder
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	// The handshake's other headers (Upgrade, Connection...) are the
	// protocol switch itself; only those kept from every client go.
	_ = resp.Header.WriteSubset(&head, notForClient)
	head.WriteString("\r\n")
	if _, err := io.WriteString(client, head.String()); err != nil {
		client.Close()
		c.conn.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(c.conn, brw.Reader)
		closeWrite(c.conn)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, c.br)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	c.conn.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		c.Close()
	}
}

func (s *Server) track(conns ...net.Conn) bool {
	s.splicesMu.Lock()
	defer s.splicesMu.Unlock()
	if s.closing.Load() {
		return false
	}
	for _, c := range conns {
		s.splices[c] = struct{}{}
	}
	return true
}

func (s *Server) untrack(conns ...net.Conn) {
	s.splicesMu.Lock()
	defer s.splicesMu.Unlock()
	for _, c := range conns {
		delete(s.splices, c)
	}
}

func (s *Server) closeSplices() {
	s.splicesMu.Lock()
	defer s.splicesMu.Unlock()
	for c := range s.splices {
		c.Close()
	}
}

// serveLocal answers origin-form requests addressed to the proxy itself.
func (s *Server) serveLocal(w http.ResponseWriter, r *http.Request) {
	if r.Method == "PRI" {
		textError(w, http.StatusHTTPVersionNotSupported, "warcproxy: HTTP/2 is not supported yet; use HTTP/1.1")
		return
	}
	if s.opts.NoLocalEndpoints && (r.URL.Path == "/status" || r.URL.Path == "/metrics") {
		textError(w, http.StatusNotFound, "warcproxy: /status and /metrics are served on --metrics-address, not on the proxy port")
		return
	}
	switch r.URL.Path {
	case "/status":
		s.serveStatus(w)
	case "/metrics":
		if s.opts.Metrics == nil {
			textError(w, http.StatusNotFound, "warcproxy: metrics are off")
			return
		}
		s.opts.Metrics.ServeHTTP(w, r)
	default:
		textError(w, http.StatusNotFound, "warcproxy: this is a recording proxy; configure it as your client's HTTP and HTTPS proxy. Local endpoints: /status, /metrics")
	}
}

// authorized checks Proxy-Authorization against the accepted pairs, in
// constant time.
func (s *Server) authorized(r *http.Request) bool {
	v := r.Header.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	match := 0
	for _, pair := range s.opts.ProxyAuth {
		match |= subtle.ConstantTimeCompare(raw, []byte(pair))
	}
	return match == 1
}

// StatusHandler serves the /status JSON (for a separate metrics listener).
func (s *Server) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { s.serveStatus(w) })
}

func (s *Server) serveStatus(w http.ResponseWriter) {
	active, waiting, refused := s.ConnStats()
	hits, misses := s.opts.CA.CacheStats()
	host, _ := os.Hostname()
	st := map[string]any{
		// warcprox's role, so that tools looking for a warcprox find it;
		// "software" says which.
		"role":                   "warcprox",
		"software":               "warcproxy",
		"host":                   host,
		"version":                s.opts.Version,
		"pid":                    os.Getpid(),
		"start_time":             s.startTime.UTC().Format(time.RFC3339),
		"active_requests":        s.active.Load(),
		"urls_processed":         s.URLsProcessed(),
		"urls_not_archived":      s.outcomes[notArchived].Load(),
		"capture_errors":         s.outcomes[failed].Load(),
		"client_errors":          s.clientErrors.Load(),
		"proxy_auth_failures":    s.authFailures.Load(),
		"client_tls_errors":      s.handshakeErrors.Load(),
		"connections_active":     active,
		"connections_waiting":    waiting,
		"connections_refused":    refused,
		"max_conns":              s.opts.MaxConns,
		"cert_cache_hits":        hits,
		"cert_cache_misses":      misses,
		"spool_memory_bytes":     s.opts.Spooler.MemoryInUse(),
		"spool_memory_budget":    s.opts.Spooler.MemoryBudget(),
		"spool_disk_bytes":       s.opts.Spooler.DiskInUse(),
		"prefix":                 s.opts.Prefix,
		"queue_full_for_seconds": s.opts.Queue.FullFor().Seconds(),
	}
	// warcprox's view of how far behind the proxy is: the oldest exchange
	// not yet written (in flight, or waiting in the writer queue).
	st["earliest_still_active_fetch_start"] = nil
	st["seconds_behind"] = 0.0
	// warcprox's details of the oldest activity (a Python socket and
	// postfetch plugin); the keys are there for clients that expect them.
	st["earliest_still_active_socket"] = map[string]any{"socket": nil, "name": nil, "peername": nil, "future_status": nil, "exception": nil}
	st["earliest_still_active_postfetch"] = map[string]any{"url": nil, "postfetch_plugin": nil}
	if t, ok := s.activeSet.earliest(); ok {
		st["earliest_still_active_fetch_start"] = t.UTC().Format(time.RFC3339Nano)
		st["seconds_behind"] = time.Since(t).Seconds()
	}
	st["unaccepted_requests"] = waiting
	st["threads"] = s.opts.MaxConns
	st["dedup_lookup_errors"] = s.dedupErrors.Load()
	if addr := s.addr.Load(); addr != nil {
		st["address"] = addr.IP.String()
		st["port"] = addr.Port
	}
	if s.opts.Status != nil {
		s.opts.Status(st)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(st)
}
