package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warcproxy/warcproxy/jobs"
	"github.com/warcproxy/warcproxy/mitm"
)

// tunnel is the state of one CONNECT: where it goes and the origin
// connection dialed before the proxy answered 200.
type tunnel struct {
	scheme    string // https if the client spoke TLS in the tunnel, else http
	authority string // host:port from the CONNECT line
	host      string
	sni       string    // server name the client sent in its TLS handshake, if valid
	job       *jobs.Job // the CONNECT's job, every request inside's (nil: none)

	mu  sync.Mutex
	pre net.Conn
}

// takePreconn hands over the connection dialed at CONNECT time, once.
func (t *tunnel) takePreconn() net.Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.pre
	t.pre = nil
	return c
}

// handleConnect dials the origin first (so that an unreachable one gets a
// real 502 instead of a tunnel that dies), answers 200, then looks at the
// client's first byte: a TLS handshake is intercepted with a leaf
// certificate from our CA; anything else is served as plain HTTP. Either
// way the tunnel's requests are served by the inner http.Server, with the
// same timeouts and limits as plain proxy connections.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.RequestURI)
	if err != nil || !validPort(port) || !mitm.ValidHostName(strings.ToLower(host)) {
		textError(w, http.StatusBadRequest, "warcproxy: CONNECT needs host:port with a port from 1 to 65535, got "+strconv.Quote(r.RequestURI))
		return
	}
	hostport := net.JoinHostPort(host, port)
	if s.isSelf(hostport) {
		textError(w, http.StatusForbidden, "warcproxy: refusing to tunnel to the proxy itself")
		return
	}
	// Take the connection over first, so that the dial can be abandoned
	// when the client goes away meanwhile (otherwise a client could hold a
	// slot for the whole --socket-timeout by connecting to a black hole and
	// hanging up). Not the request's context: a client may half-close right
	// after sending CONNECT and its first request, which cancels it.
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		textError(w, http.StatusInternalServerError, "warcproxy: cannot take over the connection")
		return
	}
	// net/http no longer tracks the connection: close it at shutdown
	// ourselves until the inner server takes it over.
	if !s.track(conn) {
		conn.Close()
		return
	}
	defer s.untrack(conn)
	_ = conn.SetDeadline(time.Time{})
	pre, err := s.dialWatching(conn, brw.Reader, hostport)
	if errors.Is(err, errClientGone) {
		s.logger.Debug("client gone while connecting", "connect", hostport)
		conn.Close()
		return
	}
	if err != nil {
		status, kind, _ := s.noteUpstreamError(hostport, err)
		msg := upstreamMessage(kind, "connecting to", hostport, err) + "\n"
		fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			status, http.StatusText(status), len(msg), msg)
		conn.Close()
		return
	}
	if !s.track(pre) {
		pre.Close()
		conn.Close()
		return
	}
	defer s.untrack(pre)
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		pre.Close()
		conn.Close()
		return
	}
	tun := &tunnel{authority: hostport, host: host, pre: pre, job: jobOf(r)}
	if s.opts.HeaderTimeout > 0 {
		_ = conn.SetReadDeadline(time.Now().Add(s.opts.HeaderTimeout))
	}
	first, err := brw.Peek(1)
	_ = conn.SetReadDeadline(time.Time{})
	tc := &tunnelConn{Conn: conn, r: brw.Reader, tun: tun}
	if err != nil {
		tc.Close()
		return
	}
	if first[0] != 0x16 { // not a TLS handshake record: plain HTTP
		tun.scheme = "http"
		s.innerLn.deliver(&servedConn{Conn: tc, s: s, tun: tun})
		return
	}
	// The handshake happens here, not in the inner server, so that the
	// server sees the decrypted connection wrapped like any other.
	tun.scheme = "https"
	tlsConn := tls.Server(tc, s.tlsCfg)
	if s.opts.HeaderTimeout > 0 {
		_ = conn.SetDeadline(time.Now().Add(s.opts.HeaderTimeout))
	}
	if err := tlsConn.HandshakeContext(s.baseCtx); err != nil {
		s.noteHandshakeError(hostport, err)
		tlsConn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if tlsConn.ConnectionState().NegotiatedProtocol == "h2" {
		s.h2Conns.Add(1)
		s.innerLn.deliver(tlsConn) // net/http serves h2 only on a bare *tls.Conn
		return
	}
	s.innerLn.deliver(&servedConn{Conn: tlsConn, s: s, tun: tun})
}

// errClientGone ends a CONNECT dial whose client closed its connection.
var errClientGone = errors.New("client closed the connection while the proxy was connecting")

// dialWatching dials hostport for a CONNECT while watching the client's
// connection: if the client closes it before the dial ends, the dial is
// abandoned. Bytes the client sends meanwhile stay buffered in br.
func (s *Server) dialWatching(conn net.Conn, br *bufio.Reader, hostport string) (net.Conn, error) {
	dctx, cancel := context.WithCancel(s.baseCtx)
	defer cancel()
	gone := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				close(gone)
				cancel()
			}
		}
	}()
	pre, err := s.up.DialTCP(dctx, hostport)
	// Stop the watcher (a read deadline in the past ends its Peek) before
	// anyone else reads from br.
	_ = conn.SetReadDeadline(time.Unix(1, 0))
	<-watched
	_ = conn.SetReadDeadline(time.Time{})
	select {
	case <-gone:
		if pre != nil {
			pre.Close()
		}
		return nil, errClientGone
	default:
	}
	return pre, err
}

// validPort accepts a decimal port from 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+'
}

// noteHandshakeError logs a failed TLS handshake with a client, at most
// once a second; the usual cause is a client that does not trust the CA.
func (s *Server) noteHandshakeError(hostport string, err error) {
	n := s.handshakeErrors.Add(1)
	if s.handshakeLog.Allow() {
		s.logger.Info("TLS handshake with client failed (does the client trust the proxy's CA certificate?)",
			"connect", hostport, "err", err, "handshake_errors_total", n)
	}
}

// tunnelConn is the client side of a CONNECT tunnel; it replays bytes the
// client sent along with the CONNECT request.
type tunnelConn struct {
	net.Conn
	r    *bufio.Reader
	tun  *tunnel
	once sync.Once
}

func (c *tunnelConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes the client connection (for upgrade splices).
func (c *tunnelConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *tunnelConn) Close() error {
	c.once.Do(func() {
		if pre := c.tun.takePreconn(); pre != nil {
			pre.Close()
		}
	})
	return c.Conn.Close()
}

// chanListener feeds tunnel connections to the inner http.Server.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
