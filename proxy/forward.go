package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/internal/bufpool"
	"github.com/warcproxy/warcproxy/wire"
)

// forward fetches and records one exchange, in named steps: admit, open
// the capture, fetch (send the request, read the response head), respond
// (the head to the client), stream (the body to the client), then submit
// the exchange to the capture stage. For a 101 Switching Protocols answer
// it returns the function that runs the tunnel which follows, so that it
// runs outside the in-flight accounting that shutdown waits for.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, t *target) (splice func()) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	s.active.Add(1)
	defer s.active.Add(-1)
	if !s.admitQueue(w, t) {
		return nil
	}
	start, uri := time.Now(), t.uri()
	meta, prefix, ok := s.admit(w, r, uri)
	if !ok {
		return nil
	}
	ex := &capture.Exchange{Start: start, TargetURI: uri, Method: r.Method, Referer: r.Header.Get("Referer"), Meta: meta, Prefix: prefix}
	s.opts.Capture.Open(ex)
	defer s.opts.Capture.Abandon(ex) // no-op once submitted
	f, err := s.fetch(w, r, t, ex)
	if err != nil {
		s.fetchFailed(w, r, ex, err)
		return nil
	}
	if f.resp.StatusCode == http.StatusSwitchingProtocols {
		f.stop()
		opened := time.Now()
		s.finish(&f, ex)
		c, resp := f.c, f.resp // not f: the closure would move it to the heap for every exchange
		return func() { s.splice(w, c, resp, ex, opened) }
	}
	if ex.SpoolErr() != nil {
		s.spoolFailed(w, &f, ex)
		return nil
	}
	s.respond(w, f.resp, ex)
	aborted := s.stream(w, &f, ex)
	s.finish(&f, ex)
	if s.logger.Enabled(r.Context(), slog.LevelDebug) {
		s.logger.Debug("exchange", "method", r.Method, "url", ex.TargetURI, "status", ex.Status,
			"bytes", ex.ResEnd-ex.ResStart, "truncated", ex.Truncated, "archived", ex.Archived())
	}
	if aborted {
		// Do not end the response cleanly: the client must see that it
		// did not get the whole body. But send what is buffered first, the
		// head at least: a client that got no status line at all would
		// take the exchange for never answered and send it again (Go's
		// and browsers' clients do), recording it once more.
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

// fetched is an origin's answer to a forwarded request, read up to the
// end of its head.
type fetched struct {
	c    *wire.Conn
	resp *http.Response
	// stop ends the watch that closes c when the client goes away; it
	// reports false if the client went away first (c is closed then).
	stop     func() bool
	ctx      context.Context // the request's: done once the client left (or a forced stop)
	reusable bool
}

// fetch sends the request upstream and reads the final response head. A
// request that failed on a reused connection before any response byte is
// sent once more on a new one when it is safe to repeat.
func (s *Server) fetch(w http.ResponseWriter, r *http.Request, t *target, ex *capture.Exchange) (fetched, error) {
	upgrade := wire.IsUpgrade(r.Header)
	headBuf := bufpool.Get()
	defer bufpool.Put(headBuf)
	out := s.outbound(w, r, t, upgrade, (*headBuf)[:0])
	ctx := r.Context()
	pre, sni := t.tunnelConn()
	for attempt := 0; ; attempt++ {
		out.ReqRec, out.ResRec = recorders(ex)
		c, err := s.up.Get(ctx, t.scheme, t.hostport, sni, pre, attempt > 0)
		pre = nil
		if err != nil {
			return fetched{}, err
		}
		f, err := s.roundTrip(ctx, c, out, ex)
		if err == nil {
			f.reusable = !f.resp.Close && !upgrade
			return f, nil
		}
		// A connection that sat idle may have been closed by the origin.
		if attempt > 0 || out.Body != nil || !safeMethod(r.Method) || !wire.IsStale(c, err) || ctx.Err() != nil {
			return fetched{}, err
		}
		s.opts.Capture.Rerecord(ex)
	}
}

// recorders are where the wire client copies the request and response
// bytes; nil (not recorded) when the exchange is not archived.
func recorders(ex *capture.Exchange) (req, res io.Writer) {
	// A nil *wire.Recorder in an io.Writer would not be nil.
	if ex.Request != nil {
		req = ex.Request
	}
	if ex.Response != nil {
		res = ex.Response
	}
	return req, res
}

// outbound is the request as sent upstream: our serialized head, and the
// client's body, read with the socket timeout so that a client that
// stalls cannot hold the origin connection and its slot.
func (s *Server) outbound(w http.ResponseWriter, r *http.Request, t *target, upgrade bool, buf []byte) *wire.Outbound {
	hasBody := r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
	host := r.Host
	if host == "" {
		host = t.authority()
	}
	out := &wire.Outbound{Method: r.Method, Head: wire.RequestHead(buf, r, host, t.requestURI, upgrade, hasBody), Length: r.ContentLength, Upgrade: upgrade}
	if hasBody {
		out.Body = s.clientBody(w, r)
		out.Expect = strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	}
	return out
}

// roundTrip runs one attempt on c and fills in what the response head
// tells about the exchange.
func (s *Server) roundTrip(ctx context.Context, c *wire.Conn, out *wire.Outbound, ex *capture.Exchange) (fetched, error) {
	if s.opts.FetchTimeout > 0 {
		c.SetFetchEnd(ex.Start.Add(s.opts.FetchTimeout))
	}
	// Close the origin connection if the client goes away or a forced
	// shutdown comes, so that nothing waits on it for the socket timeout,
	// in the head or in the body.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	out.Ctx = ctx
	resp, start, err := s.up.RoundTrip(c, out)
	if err == nil && resp.ProtoMajor == 1 && resp.ProtoMinor == 0 && ex.Response != nil &&
		ex.Response.HasTransferEncoding(start, c.Consumed()) {
		// RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message is faulty
		// framing; readers would de-chunk a body net/http passes raw.
		err = fmt.Errorf("%w: Transfer-Encoding in an HTTP/1.0 response", wire.ErrNotHTTP)
	}
	if err != nil {
		stop()
		c.Close()
		return fetched{}, err
	}
	ex.ResStart, ex.HeadEnd, ex.IP, ex.Status = start, c.Consumed(), c.IP(), resp.StatusCode
	ex.TLSVersion, ex.CipherSuite = c.TLS()
	if v := resp.Header.Values("Content-Type"); len(v) > 0 {
		ex.ContentType, ex.HasContentType = v[0], true
	}
	return fetched{c: c, resp: resp, stop: stop, ctx: ctx}, nil
}

// fetchFailed answers a request whose fetch got no response. A client
// that left first is not answered at all.
func (s *Server) fetchFailed(w http.ResponseWriter, r *http.Request, ex *capture.Exchange, err error) {
	var cbe *wire.ClientBodyError
	if r.Context().Err() != nil && !errors.As(err, &cbe) {
		// The client left (or a forced shutdown came) first: not the
		// origin's fault, and nobody to answer. Abort, so that net/http
		// does not answer an empty 200 for us either.
		s.logger.Debug("client gone before the response", "url", ex.TargetURI, "err", err)
		panic(http.ErrAbortHandler)
	}
	status, kind, label := s.noteUpstreamError(ex.TargetURI, err)
	textError(w, status, upstreamMessage(kind, "fetching", ex.TargetURI, err))
	s.opts.Capture.FetchFailed(ex, label, err)
}

// spoolFailed answers an exchange whose request or response head could
// not be spooled (a full --tmp-dir disk), before anything was sent: it
// cannot be archived, so the client gets a 503 to try again rather than a
// response that no WARC holds (a body that fails later is cut, see
// copyBody). The capture stage logs why.
func (s *Server) spoolFailed(w http.ResponseWriter, f *fetched, ex *capture.Exchange) {
	f.stop()
	f.reusable = false
	s.finish(f, ex)
	textError(w, http.StatusServiceUnavailable, "warcproxy: cannot record this exchange now (spooling it failed; see the proxy's log): try again later")
}

// finish ends the fetch: the origin connection goes back to the pool when
// it can carry another request, and the exchange goes to the capture
// stage, which finishes it.
func (s *Server) finish(f *fetched, ex *capture.Exchange) {
	ex.ResEnd = f.c.Consumed()
	s.metrics.response(ex.ResEnd - ex.ResStart)
	switch {
	case f.resp.StatusCode == http.StatusSwitchingProtocols:
		// The connection becomes the tunnel.
	case f.reusable && ex.Truncated == "" && f.c.Buffered() == 0:
		s.up.Put(f.c)
	default:
		f.c.Close()
	}
	s.opts.Capture.Submit(ex)
}

// safeMethod reports whether a request may be repeated automatically
// (RFC 9110 9.2.2: a proxy must not retry non-idempotent requests; like
// net/http, only safe methods are retried).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}
