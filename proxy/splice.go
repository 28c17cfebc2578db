package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/internal/bufpool"
	"github.com/warcproxy/warcproxy/wire"
	"github.com/warcproxy/warcproxy/wsrec"
)

// WebSocketOptions say whether and how the messages of a WebSocket are
// recorded (--websocket-messages, --websocket-record-size,
// --websocket-record-time).
type WebSocketOptions struct {
	Messages   bool
	RecordSize int64
	RecordTime time.Duration
}

// splice hands a 101 Switching Protocols exchange over to a byte tunnel
// between client and origin. The handshake is already submitted; when it
// opened a WebSocket and was archived, the messages are recorded as they
// pass (wsrec), and their last record is written when the tunnel ends.
func (s *Server) splice(w http.ResponseWriter, c *wire.Conn, resp *http.Response, ex *capture.Exchange, opened time.Time) {
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
	rec := s.recordMessages(ex, resp, opened)
	if rec != nil {
		defer s.recording.Done()
		defer rec.End()
	}
	done := make(chan struct{}, 2)
	go func() {
		relay(origin, brw.Reader, rec, wsrec.Send)
		closeWrite(origin)
		done <- struct{}{}
	}()
	go func() {
		relay(client, fromOrigin, rec, wsrec.Recv)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	origin.Close()
}

// recordMessages starts the recording of a WebSocket's messages; nil when
// they are not recorded: --websocket-messages=false, not a WebSocket, a
// handshake not archived, an extension the reader does not know, or a
// shutdown under way.
func (s *Server) recordMessages(ex *capture.Exchange, resp *http.Response, opened time.Time) *wsrec.Socket {
	if !s.opts.WebSocket.Messages || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		return nil
	}
	out := s.opts.Capture.OpenWebSocket(ex)
	if out == nil {
		return nil
	}
	s.splicesMu.Lock()
	defer s.splicesMu.Unlock()
	if s.closing.Load() {
		return nil
	}
	rec, err := wsrec.New(wsrec.Options{
		Extensions: resp.Header.Values("Sec-WebSocket-Extensions"), Opened: opened,
		MaxRecordSize: s.opts.WebSocket.RecordSize, MaxRecordTime: s.opts.WebSocket.RecordTime,
		Out: out, Spooler: s.opts.Spooler, Logger: s.logger, Metrics: s.wsMetrics, URI: out.URI(),
	})
	if err != nil {
		s.logger.Info("websocket messages not recorded", "url", out.URI(), "err", err)
		return nil
	}
	s.recording.Add(1) // under splicesMu, before Shutdown can wait
	return rec
}

// relay copies src to dst until either fails; with rec, each piece is
// read for the record after it went on.
func relay(dst io.Writer, src io.Reader, rec *wsrec.Socket, d wsrec.Direction) {
	if rec == nil {
		_, _ = io.Copy(dst, src)
		return
	}
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	for {
		n, err := src.Read(*buf)
		if n > 0 {
			if _, werr := dst.Write((*buf)[:n]); werr != nil {
				return
			}
			rec.Observe(d, (*buf)[:n])
		}
		if err != nil {
			return
		}
	}
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
