package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The upstream client is our own small HTTP/1.1 client rather than
// net/http.Transport: the WARC record must hold the exact bytes written to and
// read from the origin, so the client owns the connection, its buffered reader
// and the boundaries of every exchange on it.

const (
	maxIdlePerHost       = 64
	maxIdleTotal         = 1024
	maxIdleTime          = 60 * time.Second
	reapEvery            = time.Second
	maxInterimResponses  = 16
	maxResponseHeadBytes = 1 << 20
	expectContinueWait   = time.Second
	bufSize              = 32 << 10
)

var (
	errResponseHeadTooLarge = errors.New("response headers larger than 1 MiB")
	errUpstreamNotHTTP      = errors.New("upstream did not answer with HTTP/1.x")
	errTooManyInterim       = errors.New("upstream sent more than 16 interim (1xx) responses")
)

// upstream dials origins and keeps idle connections for reuse.
type upstream struct {
	dialer        net.Dialer
	tlsConfig     *tls.Config
	socketTimeout time.Duration

	mu        sync.Mutex
	idle      map[string][]*uconn
	idleTotal int
	reaper    *time.Timer // runs while there are idle connections
	closed    bool
}

// newUpstream returns the dialer side. self, if not nil, vets every address
// dialed (after name resolution) before connecting.
func newUpstream(socketTimeout time.Duration, verifyTLS, denyPrivate bool, self func(address string) error) *upstream {
	suites := []uint16{}
	for _, s := range tls.CipherSuites() {
		suites = append(suites, s.ID)
	}
	if !verifyTLS {
		// An archive records what old servers serve too.
		for _, s := range tls.InsecureCipherSuites() {
			suites = append(suites, s.ID)
		}
	}
	dialer := net.Dialer{Timeout: socketTimeout, KeepAlive: 30 * time.Second}
	// Checked on the address actually dialed, after name resolution, so a
	// name that resolves (or rebinds) to a refused address is caught too.
	dialer.Control = func(_, address string, _ syscall.RawConn) error {
		if self != nil {
			if err := self(address); err != nil {
				return err
			}
		}
		if denyPrivate {
			return checkTarget(address)
		}
		return nil
	}
	return &upstream{
		dialer:        dialer,
		socketTimeout: socketTimeout,
		tlsConfig: &tls.Config{
			InsecureSkipVerify: !verifyTLS, //nolint:gosec // recording what the site serves is the point; --verify-upstream-tls turns it on
			MinVersion:         tls.VersionTLS10,
			CipherSuites:       suites,
			NextProtos:         []string{"http/1.1"},
			ClientSessionCache: tls.NewLRUClientSessionCache(4096),
		},
		idle: make(map[string][]*uconn),
	}
}

// uconn is one connection to an origin.
type uconn struct {
	key      string   // scheme://host:port|sni
	raw      net.Conn // the TCP connection
	conn     net.Conn // raw, or the TLS connection over it
	ip       string
	rd       connReader
	br       *bufio.Reader
	wr       connWriter
	bw       *bufio.Writer
	reused   bool
	idleFrom time.Time
}

// connReader reads from the origin, setting the inactivity deadline before
// each read and copying every byte into the current exchange's sink.
type connReader struct {
	c       net.Conn
	timeout time.Duration
	sink    io.Writer // nil when not recording
	n       int64     // bytes read since the sink was attached
	limit   int64     // while > 0, reading past it fails (response head limit)
	// deadline, when set, overrides the inactivity timeout (100-continue wait).
	deadline time.Time
	armed    inactivity
	// fetchEnd, when set, is when the current exchange's --fetch-timeout
	// runs out: no read deadline goes past it.
	fetchEnd   time.Time
	fetchArmed bool
}

// inactivity keeps a connection's deadline between now+timeout-slack and
// now+timeout, re-arming it only when it has aged by the slack (a second
// at most) instead of on every read or write: setting a deadline costs a
// runtime timer update, and this runs for every few KB of every body.
type inactivity struct{ at time.Time }

func (a *inactivity) due(timeout time.Duration) (time.Time, bool) {
	now := time.Now()
	slack := min(timeout/4, time.Second)
	if a.at.Sub(now) >= timeout-slack {
		return time.Time{}, false
	}
	a.at = now.Add(timeout)
	return a.at, true
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.limit > 0 && r.n >= r.limit {
		return 0, errResponseHeadTooLarge
	}
	switch {
	case !r.deadline.IsZero():
		_ = r.c.SetReadDeadline(r.deadline)
		r.armed = inactivity{} // re-arm the timeout once the override ends
	case r.fetchArmed:
		// The deadline is the fetch's end, already set.
	case !r.fetchEnd.IsZero() && (r.timeout <= 0 || time.Until(r.fetchEnd) <= r.timeout):
		_ = r.c.SetReadDeadline(r.fetchEnd)
		r.fetchArmed = true
	case r.timeout > 0:
		if at, ok := r.armed.due(r.timeout); ok {
			_ = r.c.SetReadDeadline(at)
		}
	}
	n, err := r.c.Read(p)
	if n > 0 {
		r.n += int64(n)
		if r.sink != nil {
			_, _ = r.sink.Write(p[:n]) // the sink records its own failure
		}
	}
	return n, err
}

// connWriter writes to the origin and copies every byte into the sink.
type connWriter struct {
	c       net.Conn
	timeout time.Duration
	sink    io.Writer
	armed   inactivity
}

func (w *connWriter) Write(p []byte) (int, error) {
	if w.timeout > 0 {
		if at, ok := w.armed.due(w.timeout); ok {
			_ = w.c.SetWriteDeadline(at)
		}
	}
	n, err := w.c.Write(p)
	if n > 0 && w.sink != nil {
		_, _ = w.sink.Write(p[:n])
	}
	return n, err
}

// setFetchEnd bounds the reads of the exchange that is starting on c
// (--fetch-timeout); a zero end lifts the bound.
func (c *uconn) setFetchEnd(end time.Time) {
	c.rd.fetchEnd = end
	if c.rd.fetchArmed {
		c.rd.fetchArmed = false
		c.rd.armed = inactivity{} // re-arm the inactivity deadline
	}
}

func (u *upstream) newUconn(key string, raw, conn net.Conn) *uconn {
	c := &uconn{key: key, raw: raw, conn: conn}
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		c.ip = a.IP.String()
	}
	c.rd = connReader{c: conn, timeout: u.socketTimeout}
	c.wr = connWriter{c: conn, timeout: u.socketTimeout}
	c.br = bufio.NewReaderSize(&c.rd, bufSize)
	c.bw = bufio.NewWriterSize(&c.wr, 8<<10)
	return c
}

// errPrivateTarget is a dial refused by --deny-private-targets.
var errPrivateTarget = errors.New("target address is loopback, private or link-local (--deny-private-targets)")

// checkTarget refuses loopback, private (RFC 1918, RFC 4193), link-local,
// unspecified and CGNAT (RFC 6598) addresses.
func checkTarget(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip) {
		return fmt.Errorf("%s: %w", ip, errPrivateTarget)
	}
	return nil
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// dialTCP opens a TCP connection to hostport, bounded by the socket timeout.
func (u *upstream) dialTCP(ctx context.Context, hostport string) (net.Conn, error) {
	return u.dialer.DialContext(ctx, "tcp", hostport)
}

// get returns a connection to the origin: pre, the TCP connection dialed at
// CONNECT time, if it is still good; else an idle pooled one (unless fresh);
// else a new one. sni is the name the client asked for in its own TLS
// handshake (empty if none); it is sent to the origin and keys the pool.
func (u *upstream) get(ctx context.Context, scheme, hostport, sni string, pre net.Conn, fresh bool) (*uconn, error) {
	key := scheme + "://" + hostport + "|" + sni
	reused := false
	if pre != nil {
		if alive(pre) {
			reused = true // it may have sat idle: allow the stale retry
		} else {
			pre.Close()
			pre = nil
		}
	}
	if pre == nil && !fresh {
		if c := u.takeIdle(key); c != nil {
			return c, nil
		}
	}
	raw := pre
	if raw == nil {
		var err error
		if raw, err = u.dialTCP(ctx, hostport); err != nil {
			return nil, err
		}
	}
	conn := raw
	if scheme == "https" {
		cfg := u.tlsConfig.Clone()
		host, _, _ := net.SplitHostPort(hostport)
		switch {
		case sni != "":
			cfg.ServerName = sni
		case net.ParseIP(host) == nil || !cfg.InsecureSkipVerify:
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		hctx := ctx
		if u.socketTimeout > 0 {
			var cancel context.CancelFunc
			hctx, cancel = context.WithTimeout(ctx, u.socketTimeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, &tlsError{err}
		}
		conn = tc
	}
	c := u.newUconn(key, raw, conn)
	c.reused = reused
	return c, nil
}

// takeIdle returns a pooled connection that is still usable: not expired,
// not closed by the origin, and with no bytes the origin sent unasked
// (which would otherwise be taken for the next response).
func (u *upstream) takeIdle(key string) *uconn {
	now := time.Now()
	for {
		u.mu.Lock()
		list := u.idle[key]
		if len(list) == 0 {
			delete(u.idle, key)
			u.mu.Unlock()
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		u.idle[key] = list[:len(list)-1]
		u.idleTotal--
		u.mu.Unlock()
		if now.Sub(c.idleFrom) <= maxIdleTime && alive(c.raw) {
			c.reused = true
			return c
		}
		c.conn.Close()
	}
}

// put returns a clean connection to the idle pool.
func (u *upstream) put(c *uconn) {
	c.setFetchEnd(time.Time{})
	c.rd.sink, c.wr.sink = nil, nil
	c.rd.n, c.rd.limit = 0, 0
	c.idleFrom = time.Now()
	u.mu.Lock()
	if u.closed || len(u.idle[c.key]) >= maxIdlePerHost || u.idleTotal >= maxIdleTotal {
		u.mu.Unlock()
		c.conn.Close()
		return
	}
	u.idle[c.key] = append(u.idle[c.key], c)
	u.idleTotal++
	if u.reaper == nil {
		u.reaper = time.AfterFunc(reapEvery, u.reap)
	}
	u.mu.Unlock()
}

// reap closes idle connections that expired or that the origin closed (or
// wrote to), every second while there are any, so that they do not linger
// in CLOSE_WAIT; net/http.Transport notices at once with a read goroutine
// per connection, this costs one non-blocking peek per idle connection.
func (u *upstream) reap() {
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, list := range u.idle {
		kept := list[:0]
		for _, c := range list {
			if now.Sub(c.idleFrom) > maxIdleTime || !alive(c.raw) {
				c.conn.Close()
				u.idleTotal--
				continue
			}
			kept = append(kept, c)
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(u.idle, k)
		} else {
			u.idle[k] = kept
		}
	}
	if u.idleTotal > 0 && !u.closed {
		u.reaper.Reset(reapEvery)
	} else {
		u.reaper = nil
	}
}

// closeIdle closes every idle connection (at shutdown).
func (u *upstream) closeIdle() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.reaper != nil {
		u.reaper.Stop()
		u.reaper = nil
	}
	for k, list := range u.idle {
		for _, c := range list {
			c.conn.Close()
		}
		delete(u.idle, k)
	}
	u.idleTotal = 0
}

// tlsError marks a failed TLS handshake with the origin.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "TLS handshake with upstream: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// outbound is what roundTrip sends.
type outbound struct {
	method string
	head   []byte    // request line and headers, CRLF CRLF included
	body   io.Reader // nil when the request has no body
	length int64     // -1: send chunked
	expect bool      // wait for 100 Continue before sending the body
	reqRec io.Writer // receives the request bytes as written (may be nil)
	resRec io.Writer // receives the response bytes as read (may be nil)
}

// roundTrip writes the request and reads the final response head on c.
// It returns the response (whose Body reads from c.br) and the offset, in
// bytes read since the sink was attached, where the final status line starts.
func (u *upstream) roundTrip(c *uconn, out *outbound) (*http.Response, int64, error) {
	c.rd.sink, c.wr.sink = out.resRec, out.reqRec
	c.rd.n = 0
	if _, err := c.bw.Write(out.head); err != nil {
		return nil, 0, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, 0, err
	}
	req := &http.Request{Method: out.method}
	var early *http.Response
	var start int64
	if out.body != nil {
		send := true
		if out.expect {
			resp, s, err := u.awaitContinue(c, req)
			if err != nil {
				return nil, 0, err
			}
			if resp != nil { // a final answer instead of 100: the body stays unsent
				early, start, send = resp, s, false
			}
		}
		if send {
			if err := u.sendBody(c, out); err != nil {
				var cbe *clientBodyError
				if errors.As(err, &cbe) {
					return nil, 0, err // the client's fault: don't wait for the origin
				}
				// The origin may have answered and closed early (413, 401...);
				// a response already on the wire is still worth reading. The
				// connection is unusable after a failed write.
				if resp, s, rerr := readFinal(c, req); rerr == nil {
					resp.Close = true
					return resp, s, nil
				}
				return nil, 0, err
			}
		}
	}
	if early != nil {
		early.Close = true // the declared body was never sent
		return early, start, nil
	}
	return readFinal(c, req)
}

func (u *upstream) sendBody(c *uconn, out *outbound) error {
	buf := getBuf()
	defer putBuf(buf)
	var w io.Writer = c.bw
	var cw io.WriteCloser
	if out.length < 0 {
		cw = httputil.NewChunkedWriter(c.bw)
		w = cw
	}
	if _, err := io.CopyBuffer(w, out.body, *buf); err != nil {
		return &clientBodyError{err}
	}
	if cw != nil {
		if err := cw.Close(); err != nil {
			return err
		}
		if _, err := c.bw.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// awaitContinue waits a short while for the origin's 100 Continue. It
// returns a non-nil response if the origin answered with a final status
// instead, and nil if the body should be sent (100 seen, or no answer in
// time, as RFC 9110 allows).
func (u *upstream) awaitContinue(c *uconn, req *http.Request) (*http.Response, int64, error) {
	c.rd.limit = c.rd.n + maxResponseHeadBytes // for all interim heads together
	defer func() { c.rd.limit = 0 }()
	for range maxInterimResponses {
		c.rd.deadline = time.Now().Add(expectContinueWait)
		_, err := c.br.Peek(1)
		c.rd.deadline = time.Time{}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		start := c.consumed()
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, 0, headError(err)
		}
		if resp.StatusCode == http.StatusContinue {
			return nil, 0, nil
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, start, nil
		}
		// Another interim response (102, 103): keep waiting.
	}
	return nil, 0, errTooManyInterim
}

// readFinal reads responses until a final one (or 101), skipping interim
// 1xx responses, which are not part of the response record. The head limit
// covers the interim responses and the final head together.
func readFinal(c *uconn, req *http.Request) (*http.Response, int64, error) {
	c.rd.limit = c.rd.n + maxResponseHeadBytes
	defer func() { c.rd.limit = 0 }()
	for range maxInterimResponses + 1 {
		start := c.consumed()
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, 0, headError(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, start, nil
		}
	}
	return nil, 0, errTooManyInterim
}

// consumed is the number of bytes of this exchange that the parser has used.
func (c *uconn) consumed() int64 { return c.rd.n - int64(c.br.Buffered()) }

func headError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("upstream closed the connection before a complete response: %w", err)
	}
	if errors.Is(err, errResponseHeadTooLarge) || errors.Is(err, errTooManyInterim) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("%w: %v", errUpstreamNotHTTP, err)
}

// clientBodyError is a failure to read the request body from the client.
type clientBodyError struct{ err error }

func (e *clientBodyError) Error() string { return "reading request body from client: " + e.err.Error() }
func (e *clientBodyError) Unwrap() error { return e.err }

// isStale reports whether err on a reused connection means the origin had
// closed it while idle, so the request can be sent again on a new one.
func isStale(c *uconn, err error) bool {
	if !c.reused || c.rd.n > 0 {
		return false
	}
	var cbe *clientBodyError
	if errors.As(err, &cbe) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }
