package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/internal/bufpool"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/wire"
)

// notForClient are response headers kept in the record but not passed to
// the client. Strict-Transport-Security, as warcprox: a browser that kept it
// would upgrade the site's http:// links itself, so they would never be
// fetched (and archived) as http://. Warcprox-Meta: only the proxy speaks
// it to the crawler; a site that sent its own (say a 420 with
// "reached-limit") could otherwise make a crawler such as Brozzler end its
// crawl. warcprox passes the origin's copy on; this is stricter.
var notForClient = map[string]bool{"Strict-Transport-Security": true, "Warcprox-Meta": true}

// respond sends the client the origin's status and headers: hop-by-hop
// ones removed, no Date or Content-Type the origin did not send, and
// warcprox's capture-metadata when the crawler asked for it.
func (s *Server) respond(w http.ResponseWriter, resp *http.Response, ex *capture.Exchange) {
	h := w.Header()
	copyResponseHeaders(h, resp.Header)
	if ex.Meta != nil && ex.Meta.Accepts("capture-metadata") {
		// warcprox's form; the timestamp is the record's WARC-Date.
		h.Set(warcproxmeta.HeaderName, `{"capture-metadata":{"timestamp":"`+ex.Start.UTC().Format("2006-01-02T15:04:05Z")+`"}}`)
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = nil // don't let net/http add one the origin did not send
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // nor sniff a Content-Type
	}
	if resp.ContentLength >= 0 && len(resp.TransferEncoding) == 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
}

// copyResponseHeaders copies the origin's headers for the client, without
// hop-by-hop ones; Content-Length is set by the caller.
func copyResponseHeaders(dst, src http.Header) {
	conn := src["Connection"]
	for k, vv := range src {
		if wire.HopByHop[k] || notForClient[k] || k == "Content-Length" || wire.InConnection(conn, k) {
			continue
		}
		dst[k] = vv
	}
}

// stream copies the response body to the client, then the origin's
// trailer fields. It reports whether the client's response must be
// aborted (the body is not whole).
func (s *Server) stream(w http.ResponseWriter, f *fetched, ex *capture.Exchange) (aborted bool) {
	ex.Payload.R = f.resp.Body
	aborted, eof := s.copyBody(w, f, ex)
	if eof && !aborted {
		// The origin's trailer fields, which net/http read with the last
		// chunk (warcprox relays them as they came).
		h := w.Header()
		for k, vv := range f.resp.Trailer {
			if !wire.HopByHop[k] && !notForClient[k] && k != "Content-Length" {
				h[http.TrailerPrefix+k] = vv
			}
		}
	}
	if !f.stop() {
		// The client went away while we were reading: the connection is
		// closed.
		f.reusable = false
		if ex.Truncated == "" && !eof {
			ex.Truncated = capture.TruncDisconnect
			aborted = true
		}
	}
	return aborted
}

// copyBody streams the response body to the client, flushing whenever the
// origin has nothing more buffered, and stops at --max-resource-size. It
// reports whether the client's response must be aborted, and whether the
// body was read to its end.
func (s *Server) copyBody(w http.ResponseWriter, f *fetched, ex *capture.Exchange) (aborted, eof bool) {
	if f.resp.Body == http.NoBody {
		return false, true
	}
	flusher, _ := w.(http.Flusher)
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	limit := s.readLimit(f.resp)
	for {
		p := *buf
		if limit > 0 {
			left := limit - ex.Payload.N
			if left <= 0 {
				ex.Truncated = capture.TruncLength
				return true, false
			}
			p = p[:min(int64(len(p)), left)]
		}
		n, err := ex.Payload.Read(p)
		if ex.SpoolErr() != nil {
			// The exchange can no longer be archived (its bytes could not
			// be spooled: a full disk): cut the client's response, so that
			// a crawler sees a failed fetch to try again, not a whole
			// response that no WARC holds. The capture stage logs why.
			f.reusable = false
			return true, false
		}
		if max := s.opts.MaxResourceSize; max > 0 && ex.Payload.N > max {
			// The byte read past --max-resource-size only shows that the
			// body is longer: the client does not get it.
			n -= int(ex.Payload.N - max)
		}
		if n > 0 {
			if _, werr := w.Write(p[:n]); werr != nil {
				// The client went away: keep what was read, stop fetching.
				if err == io.EOF {
					return true, true // the record is whole all the same
				}
				ex.Truncated = capture.TruncDisconnect
				return true, false
			}
			if f.c.Buffered() == 0 && flusher != nil {
				flusher.Flush()
			}
		}
		if err == io.EOF {
			if s.opts.MaxResourceSize > 0 && ex.Payload.N > s.opts.MaxResourceSize {
				ex.Truncated = capture.TruncLength
				return true, true
			}
			return false, true
		}
		if err != nil {
			if f.ctx.Err() != nil {
				// The client left (or a forced stop came): the watch closed
				// the origin connection under this read; not the origin's
				// failure.
				ex.Truncated = capture.TruncDisconnect
				return true, false
			}
			s.bodyFailed(ex, err)
			return true, false
		}
	}
}

// readLimit is how many body bytes to read at most (0: no limit): exactly
// --max-resource-size when the length is known to be over it, else one
// byte past it, which shows that a body of unknown length is longer.
func (s *Server) readLimit(resp *http.Response) int64 {
	limit := s.opts.MaxResourceSize
	if limit > 0 && resp.ContentLength <= limit {
		limit++
	}
	return limit
}

// bodyFailed marks an exchange whose origin failed mid-body.
func (s *Server) bodyFailed(ex *capture.Exchange, err error) {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		ex.Truncated = capture.TruncTime
	case errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		ex.Truncated = capture.TruncDisconnect
	default:
		// Broken framing (a bad chunk size line): the capture stage
		// keeps the whole chunks before it in the record.
		ex.Truncated = capture.TruncDisconnect
		ex.BrokenFraming = true
	}
	s.logger.Info("upstream failed mid-body", "url", ex.TargetURI, "read", ex.Payload.N, "err", err)
}
