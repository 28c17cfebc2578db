package proxy

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/warcproxy/warcproxy/capture"
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
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.uploads.Add(1) // what a cut at shutdown loses (Shutdown)
	defer s.uploads.Add(-1)
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
