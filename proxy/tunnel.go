package proxy

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// tunnel is the state of one CONNECT: where it goes and the origin
// connection dialed before the proxy answered 200.
type tunnel struct {
	scheme    string // https if the client spoke TLS in the tunnel, else http
	authority string // host:port from the CONNECT line
	host      string

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
	hostport, host := withPort(r.RequestURI, "https")
	if host == "" {
		textError(w, http.StatusBadRequest, "warcproxy: CONNECT needs host:port")
		return
	}
	t := &target{scheme: "https", hostport: hostport, host: host, requestURI: "/"}
	pre, err := s.up.dialTCP(r.Context(), hostport)
	if err != nil {
		s.upstreamError(w, r, t, err)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		pre.Close()
		textError(w, http.StatusInternalServerError, "warcproxy: cannot take over the connection")
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		pre.Close()
		conn.Close()
		return
	}
	tun := &tunnel{authority: hostport, host: host, pre: pre}
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
	if first[0] == 0x16 { // TLS record type: handshake
		tun.scheme = "https"
		s.innerLn.deliver(tls.Server(tc, s.tlsCfg))
		return
	}
	tun.scheme = "http"
	s.innerLn.deliver(tc)
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
