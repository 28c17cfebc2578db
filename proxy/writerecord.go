package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/wire"
)

// warcprox's methods for writing a record that is not a fetch (a
// screenshot, crawl metadata): the request's body becomes the block, its
// URI the WARC-Target-URI, its Content-Type and WARC-Type headers those of
// the record. PUTMETA is the deprecated form with WARC-Type metadata.
const (
	methodWriteRecord = "WARCPROX_WRITE_RECORD"
	methodPutMeta     = "PUTMETA"
)

// writeRecord checks a write-record request and admits it like a fetch
// (limits and blocks apply, as in warcprox), then has the capture stage
// write its body; 204 when the record is queued.
func (s *Server) writeRecord(w http.ResponseWriter, r *http.Request, uri string) {
	rec := &capture.Record{
		Start: time.Now(), URI: uri, Method: r.Method,
		WARCType: r.Header.Get("WARC-Type"), ContentType: r.Header.Get("Content-Type"), Length: r.ContentLength,
	}
	if r.Method == methodPutMeta {
		rec.WARCType = "metadata"
	}
	if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
		textError(w, http.StatusBadRequest, "warcproxy: "+methodWriteRecord+" needs an absolute URI with a scheme (e.g. screenshot:https://...), got "+strconv.Quote(uri))
		return
	}
	if rec.WARCType == "" || rec.ContentType == "" || r.ContentLength < 0 || r.Header.Get("Content-Length") == "" {
		textError(w, http.StatusBadRequest, "warcproxy: WARC-Type, Content-Length and Content-Type request headers are required for "+methodWriteRecord)
		return
	}
	var ok bool
	if rec.Meta, rec.Prefix, ok = s.admit(w, r, uri); !ok {
		return
	}
	if err := s.opts.Capture.WriteRecord(rec, s.clientBody(w, r)); err != nil {
		status, msg := recordError(err)
		textError(w, status, "warcproxy: "+msg)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// recordError is the answer to a record the capture stage did not write.
func recordError(err error) (int, string) {
	var ne net.Error
	switch {
	case errors.Is(err, capture.ErrBody) && errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, "the record's body stalled: " + ne.Error()
	case errors.Is(err, capture.ErrSpool):
		return http.StatusInternalServerError, err.Error()
	case errors.Is(err, capture.ErrNotQueued):
		return http.StatusServiceUnavailable, err.Error()
	}
	// The client's body, or a record the writer refused (a WARC-Type
	// that is not a token, a URI with control characters).
	return http.StatusBadRequest, err.Error()
}

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
