package proxy

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/warcproxy/warcproxy/jobs"
	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// Admission: every refusal the proxy makes before it fetches anything,
// in the order a request meets them: 407 (--proxy-auth), 503 (the writer
// queue has been full too long), 400 (a bad Warcprox-Meta header), 420/430
// (a Warcprox-Meta limit reached; 503 if the counters cannot be read), 403
// (a block rule). 400 for unusable targets is in route.go and tunnel.go.

// authorize finds who sends a request: with --proxy-auth or --jobs it
// answers 407 and reports false when the credentials are missing or wrong
// (whose, jobs.go); it returns the request's job, nil for none.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (*jobs.Job, bool) {
	cj, _ := r.Context().Value(connJobsKey{}).(connJobs)
	if cj.table == nil && len(s.opts.ProxyAuth) == 0 {
		return nil, true
	}
	proxyRequest := r.Method == http.MethodConnect || r.URL.IsAbs() ||
		r.Method == methodWriteRecord || r.Method == methodPutMeta
	job, err := s.whose(cj, proxyCredentials(r), proxyRequest)
	if err == nil {
		return job, true
	}
	s.authFailures.Add(1)
	// No credentials is how a browser's first request through the proxy
	// arrives (it answers the challenge): not worth a line at info.
	if err != errNoCredentials && s.authLog.Allow() {
		s.logger.Info("proxy authentication refused (407)", "reason", err.Error(),
			"remote", r.RemoteAddr, "failures_total", s.authFailures.Load())
	} else if err == errNoCredentials {
		s.logger.Debug("proxy authentication asked for (407)", "remote", r.RemoteAddr)
	}
	w.Header().Set("Proxy-Authenticate", `Basic realm="warcproxy"`)
	textError(w, http.StatusProxyAuthRequired, "warcproxy: proxy authentication required (Proxy-Authorization: Basic): "+err.Error())
	return nil, false
}

// proxyUser reports, in constant time, whether user:password (raw) is
// one of --proxy-auth's pairs.
func (s *Server) proxyUser(raw []byte) bool {
	if raw == nil {
		return false
	}
	match := 0
	for _, pair := range s.opts.ProxyAuth {
		match |= subtle.ConstantTimeCompare(raw, []byte(pair))
	}
	return match == 1
}

// admitQueue answers 503 when the writer queue has been full for longer
// than --queue-full-timeout, so new work is refused before it is fetched
// and held.
func (s *Server) admitQueue(w http.ResponseWriter, t *target) bool {
	if s.opts.QueueFullTimeout <= 0 {
		return true
	}
	d := s.opts.Backlog.FullFor()
	if d <= s.opts.QueueFullTimeout {
		return true
	}
	w.Header().Set("Retry-After", "5")
	textError(w, http.StatusServiceUnavailable, fmt.Sprintf(
		"warcproxy: the WARC writer queue has been full for %s (--queue-full-timeout %s); not fetching %s",
		d.Round(time.Millisecond), s.opts.QueueFullTimeout, t.uri()))
	return false
}

// admit reads the crawler's Warcprox-Meta header, if any, and answers the
// request itself when the header is invalid (400), a limit is reached
// (420/430) or a block rule applies (403), in warcprox's order. It returns
// the header (nil without one), the WARC prefix to use ("-": don't
// archive) and whether to go on.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, uri string) (*warcproxmeta.Meta, string, bool) {
	meta, err := s.requestMeta(r)
	if err == nil && meta == nil {
		return nil, s.opts.Prefix, true
	}
	if err == nil && meta.WarcPrefix != nil && !meta.DoNotArchive() {
		if perr := s.opts.Capture.CheckPrefix(*meta.WarcPrefix); perr != nil {
			err = fmt.Errorf("%w: field \"warc-prefix\": %v", warcproxmeta.ErrInvalid, perr)
		}
	}
	if err != nil {
		s.logger.Info("bad Warcprox-Meta header", "url", uri, "err", err)
		textError(w, http.StatusBadRequest, "warcproxy: "+err.Error())
		return nil, "", false
	}
	if job := jobOf(r); job != nil {
		s.jobRequests.add(job.Name)
	}
	if !s.enforceLimits(w, r, uri, meta) {
		return nil, "", false
	}
	if rule := meta.BlockingRule(uri); rule != nil {
		w.Header().Set(warcproxmeta.HeaderName, warcproxmeta.BlockedHeader(rule))
		textError(w, http.StatusForbidden, "request rejected by warcprox: blocked by rule found in Warcprox-Meta header: "+warcproxmeta.ASCIIJSON(rule.Raw))
		return nil, "", false
	}
	if meta.WarcPrefix != nil {
		return meta, *meta.WarcPrefix, true
	}
	return meta, s.opts.Prefix, true
}

// requestMeta is the Warcprox-Meta a request goes by: its job's merged
// with its own header (jobs.Job.Meta), or its header alone; nil when it
// has neither. The first header counts, as in warcprox.
func (s *Server) requestMeta(r *http.Request) (*warcproxmeta.Meta, error) {
	raw := r.Header.Get(warcproxmeta.HeaderName)
	if job := jobOf(r); job != nil {
		return job.Meta(&s.meta, raw)
	}
	if raw == "" {
		return nil, nil
	}
	return s.meta.Parse(raw)
}

// enforceLimits answers 420 (limits) or 430 (soft-limits) with warcprox's
// headers when a bucket the request counts in has reached one, and reports
// whether to go on.
func (s *Server) enforceLimits(w http.ResponseWriter, r *http.Request, uri string, meta *warcproxmeta.Meta) bool {
	reached, err := s.opts.Capture.CheckLimits(r.Context(), uri, meta)
	if err != nil {
		s.logger.Error("cannot check limits: statistics unavailable", "url", uri, "err", err)
		w.Header().Set("Retry-After", "5")
		textError(w, http.StatusServiceUnavailable, "warcproxy: cannot check Warcprox-Meta limits: statistics unavailable: "+err.Error())
		return false
	}
	if reached == nil {
		return true
	}
	rejectLimit(w, r, reached)
	s.logger.Info("request rejected: limit reached", "url", uri, "limit", reached.Key, "value", reached.Limit, "soft", reached.Soft)
	return false
}

// rejectLimit sends warcprox's answer to a request over a limit: "420
// Reached limit" or "430 Reached soft limit" (net/http cannot send those
// reason phrases, so the response is written on the hijacked connection,
// which is closed after it, as warcprox closes it; an HTTP/2 stream gets
// the status with Go's reason phrase, and the connection stays up).
func rejectLimit(w http.ResponseWriter, r *http.Request, x *warcproxmeta.LimitReached) {
	status, reason := x.Status()
	meta, body := x.Header(), x.Body()
	if hj, ok := w.(http.Hijacker); ok {
		if c, bw, err := hj.Hijack(); err == nil {
			defer c.Close()
			proto := "HTTP/1.1"
			if r.ProtoMajor == 1 && r.ProtoMinor == 0 {
				proto = "HTTP/1.0"
			}
			fmt.Fprintf(bw, "%s %d %s\r\nContent-Type: text/plain;charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n%s: %s\r\n\r\n",
				proto, status, reason, len(body), warcproxmeta.HeaderName, meta)
			if r.Method != http.MethodHead {
				_, _ = bw.WriteString(body)
			}
			_ = bw.Flush()
			return
		}
	}
	h := w.Header()
	h.Set(warcproxmeta.HeaderName, meta)
	h.Set("Content-Type", "text/plain;charset=utf-8")
	if r.ProtoMajor == 1 {
		// Over HTTP/2 it would end the whole connection (a GOAWAY), not
		// this stream.
		h.Set("Connection", "close")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}
