package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/wire"
)

// splice hands a 101 Switching Protocols exchange over to a byte tunnel
// between client and origin (WebSocket). Only the handshake is recorded.
func (s *Server) splice(w http.ResponseWriter, c *wire.Conn, resp *http.Response) {
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		c.Close()
		return
	}
	origin, fromOrigin := c.Detach()
	_ = client.SetDeadline(time.Time{})
	if !s.track(client, origin) {
		client.Close()
		origin.Close()
		return
	}
	defer s.untrack(client, origin)
	var head strings.Builder
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	// The handshake's other headers (Upgrade, Connection...) are the
	// protocol switch itself; only those kept from every client go.
	_ = resp.Header.WriteSubset(&head, notForClient)
	head.WriteString("\r\n")
	if _, err := io.WriteString(client, head.String()); err != nil {
		client.Close()
		origin.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(origin, brw.Reader)
		closeWrite(origin)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, fromOrigin)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	origin.Close()
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
