// Package wire is the proxy's upstream side: its own small HTTP/1.1 client
// rather than net/http.Transport, because the WARC record must hold the
// exact bytes written to and read from the origin. The client owns each
// origin connection, its buffered reader and the boundaries of every
// exchange on it; Recorders take a copy of every byte as it passes and hash
// it, so a capture's block digests are ready when the exchange ends.
package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

const (
	maxIdlePerHost      = 64
	maxIdleTotal        = 1024
	maxIdleTime         = 60 * time.Second
	reapEvery           = time.Second
	maxInterimResponses = 16
	// maxResponseHeadBytes bounds the interim responses and the final
	// response head together; more is ErrResponseHeadTooLarge.
	maxResponseHeadBytes = 1 << 20
	expectContinueWait   = time.Second
)

// Errors of an origin that did not answer with a usable HTTP/1.x response.
var (
	ErrResponseHeadTooLarge = errors.New("response headers larger than 1 MiB")
	ErrNotHTTP              = errors.New("upstream did not answer with HTTP/1.x")
	ErrUnaskedUpgrade       = errors.New("upstream switched protocols (101) for a request that did not ask to")
	ErrTooManyInterim       = errors.New("upstream sent more than 16 interim (1xx) responses")
)

// Client dials origins, sends requests and reads responses on connections
// it owns, and keeps idle connections for reuse.
type Client struct {
	dialer        net.Dialer
	routeDialer   net.Dialer // to a route's own address: no private check
	route, tor    *route     // nil: direct
	denyPrivate   bool
	vet           func(address string) error
	tlsConfig     *tls.Config
	socketTimeout time.Duration

	mu        sync.Mutex
	idle      map[string][]*Conn
	idleTotal int
	reaper    *time.Timer // runs while there are idle connections
	closed    bool
}

// Options configure a Client. A zero SocketTimeout means none.
type Options struct {
	// SocketTimeout bounds a dial, a TLS handshake and each read or write
	// on an origin connection.
	SocketTimeout time.Duration
	// VerifyTLS checks origin certificates; off, the client also offers
	// TLS 1.0 and legacy cipher suites (an archive records old servers too).
	VerifyTLS bool
	// DenyPrivateTargets refuses loopback, private and link-local addresses.
	DenyPrivateTargets bool
	// AllowRenegotiation lets origins renegotiate (TLS 1.2 and older) as
	// often as they ask, secure (RFC 5746) or not; off, a renegotiation
	// request fails the read on that connection.
	AllowRenegotiation bool
	// Vet, if not nil, checks every address dialed, after name resolution
	// (the proxy refuses its own listening socket there).
	Vet func(address string) error
	// Route, if set, is how every origin is reached (SOCKS5 or a parent
	// HTTP proxy) instead of dialing it.
	Route Route
	// TorSOCKS, if set, is the SOCKS5 address .onion hosts are reached
	// through, whatever Route says.
	TorSOCKS string
}

// NewClient returns a client with an empty connection pool.
func NewClient(o Options) *Client {
	socketTimeout, verifyTLS := o.SocketTimeout, o.VerifyTLS
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
	routeDialer := dialer
	main, tor := newRoutes(o)
	renegotiation := tls.RenegotiateNever
	if o.AllowRenegotiation {
		renegotiation = tls.RenegotiateFreelyAsClient
	}
	u := &Client{
		dialer:        dialer,
		routeDialer:   routeDialer,
		route:         main,
		tor:           tor,
		denyPrivate:   o.DenyPrivateTargets,
		vet:           o.Vet,
		socketTimeout: socketTimeout,
		tlsConfig: &tls.Config{
			Renegotiation:      renegotiation,
			InsecureSkipVerify: !verifyTLS, //nolint:gosec // recording what the site serves is the point; --verify-upstream-tls turns it on
			MinVersion:         tls.VersionTLS10,
			CipherSuites:       suites,
			NextProtos:         []string{"http/1.1"},
			ClientSessionCache: tls.NewLRUClientSessionCache(4096),
		},
		idle: make(map[string][]*Conn),
	}
	// Checked on the address actually dialed, after name resolution, so a
	// name that resolves (or rebinds) to a refused address is caught too.
	u.dialer.Control = func(_, address string, _ syscall.RawConn) error { return u.vetTarget(address) }
	// A route's own address may be private: the operator chose it.
	u.routeDialer.Control = func(_, address string, _ syscall.RawConn) error {
		if u.vet != nil {
			return u.vet(address)
		}
		return nil
	}
	return u
}

// DialTCP opens a connection to hostport, bounded by the socket timeout:
// directly, or a tunnel through the route hostport takes.
func (u *Client) DialTCP(ctx context.Context, hostport string) (net.Conn, error) {
	if rt := u.routeFor(hostport); rt != nil {
		return u.dialVia(ctx, rt, hostport)
	}
	return u.dialer.DialContext(ctx, "tcp", hostport)
}

// Get returns a connection to the origin: pre, the TCP connection dialed at
// CONNECT time, if it is still good; else an idle pooled one (unless fresh);
// else a new one. sni is the name the client asked for in its own TLS
// handshake (empty if none); it is sent to the origin and keys the pool.
func (u *Client) Get(ctx context.Context, scheme, hostport, sni string, pre net.Conn, fresh bool) (*Conn, error) {
	reused := false
	if pre != nil {
		if alive(pre) {
			reused = true // it may have sat idle: allow the stale retry
		} else {
			pre.Close()
			pre = nil
		}
	}
	rt := u.routeFor(hostport)
	// Plain HTTP through a parent goes to it in absolute form, on a
	// connection to the parent itself rather than a CONNECT tunnel.
	var fwd *route
	if pre == nil && scheme == "http" && rt != nil && rt.kind == RouteParent {
		fwd = rt
	}
	key := poolKey(rt, fwd != nil, scheme, hostport, sni)
	if pre == nil && !fresh {
		if c := u.takeIdle(key); c != nil {
			return c, nil
		}
	}
	raw, err := u.dialFor(ctx, pre, fwd, hostport)
	if err != nil {
		return nil, err
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
			return nil, &TLSError{err}
		}
		conn = tc
	}
	c := u.newConn(key, raw, conn, rt != nil)
	c.reused = reused
	if fwd != nil {
		c.fwdRoute, c.fwdOrigin = fwd, "http://"+hostport
	}
	return c, nil
}

// dialFor returns the connection a request goes out on: pre (dialed at
// CONNECT time) if any, else a connection to the parent (fwd) for a
// request in absolute form, else a new one to hostport.
func (u *Client) dialFor(ctx context.Context, pre net.Conn, fwd *route, hostport string) (net.Conn, error) {
	switch {
	case pre != nil:
		return pre, nil
	case fwd != nil:
		if err := u.checkRouted(ctx, fwd, hostport); err != nil {
			return nil, err
		}
		return u.dialRoute(ctx, fwd)
	}
	return u.DialTCP(ctx, hostport)
}

// poolKey keys idle connections by route and origin: a connection is only
// reused for the same origin the same way (a tunnel through the parent is
// not a connection that speaks to the parent in absolute form).
func poolKey(rt *route, fwd bool, scheme, hostport, sni string) string {
	key := scheme + "://" + hostport + "|" + sni
	switch {
	case rt == nil:
		return key
	case fwd:
		return key + "|forward " + rt.kind + " " + rt.addr
	}
	return key + "|via " + rt.kind + " " + rt.addr
}

// TLSError marks a failed TLS handshake with the origin.
type TLSError struct{ err error }

func (e *TLSError) Error() string { return "TLS handshake with upstream: " + e.err.Error() }
func (e *TLSError) Unwrap() error { return e.err }
