package proxy

import (
	"bytes"
	"net"
	"sync/atomic"
)

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
	s      *Server
	tun    *tunnel
	hf     hostFilterReader
	heard  atomic.Bool // the client has sent at least one byte (silent.go)
	listed atomic.Bool // in freshConns (silent.go)
}

// Read passes the client's bytes through the write-record Host filter
// (hostfix.go).
func (c *servedConn) Read(p []byte) (int, error) {
	n, err := c.hf.read(c.Conn, p)
	if n > 0 && !c.heard.Load() {
		c.heard.Store(true)
	}
	return n, err
}

// goErrorHeaders is how net/http writes its own error responses, in one
// Write; the proxy's own error responses look different (nosniff header).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *servedConn) Write(p []byte) (int, error) {
	if len(p) > 12 && len(p) < 512 && string(p[:9]) == "HTTP/1.1 " && (p[9] == '4' || p[9] == '5') &&
		bytes.Contains(p, []byte(goErrorHeaders)) {
		line, _, _ := bytes.Cut(p, []byte("\r\n"))
		c.s.noteClientError(c.RemoteAddr().String(), "rejected a malformed client request", "status", string(line[9:]))
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

// noteClientError counts a request net/http refused (msg says how; attrs
// name the status or reason) and logs it, at most once a second so that a
// hostile client cannot flood the log.
func (s *Server) noteClientError(remote, msg string, attrs ...any) {
	n := s.clientErrors.Add(1)
	if s.clientErrLog.Allow() {
		s.logger.Info(msg, append(attrs, "remote", remote, "client_errors_total", n)...)
	}
}
