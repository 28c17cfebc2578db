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
	ErrTooManyInterim       = errors.New("upstream sent more than 16 interim (1xx) responses")
)

// Client dials origins, sends requests and reads responses on connections
// it owns, and keeps idle connections for reuse.
type Client struct {
	dialer        net.Dialer
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
}

// NewClient returns a client with an empty connection pool.
func NewClient(o Options) *Client {
	socketTimeout, verifyTLS, denyPrivate, self := o.SocketTimeout, o.VerifyTLS, o.DenyPrivateTargets, o.Vet
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
	renegotiation := tls.RenegotiateNever
	if o.AllowRenegotiation {
		renegotiation = tls.RenegotiateFreelyAsClient
	}
	return &Client{
		dialer:        dialer,
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
}

// DialTCP opens a TCP connection to hostport, bounded by the socket timeout.
func (u *Client) DialTCP(ctx context.Context, hostport string) (net.Conn, error) {
	return u.dialer.DialContext(ctx, "tcp", hostport)
}

// Get returns a connection to the origin: pre, the TCP connection dialed at
// CONNECT time, if it is still good; else an idle pooled one (unless fresh);
// else a new one. sni is the name the client asked for in its own TLS
// handshake (empty if none); it is sent to the origin and keys the pool.
func (u *Client) Get(ctx context.Context, scheme, hostport, sni string, pre net.Conn, fresh bool) (*Conn, error) {
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
		if raw, err = u.DialTCP(ctx, hostport); err != nil {
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
			return nil, &TLSError{err}
		}
		conn = tc
	}
	c := u.newConn(key, raw, conn)
	c.reused = reused
	return c, nil
}

// TLSError marks a failed TLS handshake with the origin.
type TLSError struct{ err error }

func (e *TLSError) Error() string { return "TLS handshake with upstream: " + e.err.Error() }
func (e *TLSError) Unwrap() error { return e.err }
