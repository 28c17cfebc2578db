package proxy

import (
	"io"
	"net/http"
	"time"

	"github.com/warcproxy/warcproxy/wire"
)

// clientBody is the request body, read with --socket-timeout as an
// inactivity timeout: a client that announces a body and stalls must not
// hold the origin connection and its slot.
func (s *Server) clientBody(w http.ResponseWriter, r *http.Request) io.Reader {
	if s.opts.Upstream.SocketTimeout <= 0 {
		return r.Body
	}
	return &clientBodyReader{r: r.Body, rc: http.NewResponseController(w), timeout: s.opts.Upstream.SocketTimeout}
}

// clientBodyReader reads a request body from the client with an inactivity
// timeout, re-armed as the body arrives (not on every read: see
// inactivity).
type clientBodyReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	armed   wire.Inactivity
}

func (b *clientBodyReader) Read(p []byte) (int, error) {
	if at, ok := b.armed.Due(b.timeout); ok {
		_ = b.rc.SetReadDeadline(at)
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		// The body is in: lift the deadline, so that it cannot pass for
		// the client going away while the response streams (net/http's
		// background read lifts it too, today).
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
