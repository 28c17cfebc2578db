package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

type tunnelKey struct{}

// target is where a request goes.
type target struct {
	scheme     string
	hostport   string // for dialing, port always present
	host       string
	requestURI string // origin-form
	tun        *tunnel
}

// authority is host[:port], without the scheme's default port.
func (t *target) authority() string {
	h := t.hostport
	if (t.scheme == "http" && strings.HasSuffix(h, ":80")) || (t.scheme == "https" && strings.HasSuffix(h, ":443")) {
		h = h[:strings.LastIndexByte(h, ':')]
	}
	return h
}

func (t *target) uri() string {
	if t.requestURI == "*" {
		return t.scheme + "://" + t.authority()
	}
	return t.scheme + "://" + t.authority() + escapeURIBytes(t.requestURI)
}

// escapeURIBytes percent-encodes the bytes a URI may not hold raw (non-ASCII,
// controls, space), as browsers do, so that WARC-Target-URI reads the same in
// every WARC reader; the request record keeps the bytes as sent.
func escapeURIBytes(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ServeHTTP routes every request of the outer and inner servers: the
// proxy's refusals first, then WARCPROX_WRITE_RECORD, CONNECT, forwarded
// requests, and requests to the proxy itself (/status, /metrics).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tun, _ := r.Context().Value(tunnelKey{}).(*tunnel)
	if r.Method == "PRI" || r.ProtoMajor >= 2 {
		if !negotiatedH2(r) {
			// An HTTP/2 connection preface without ALPN h2, plain or in a
			// tunnel: never forwarded or recorded as an HTTP/1.1 request.
			textError(w, http.StatusHTTPVersionNotSupported, "warcproxy: HTTP/2 only inside a CONNECT tunnel, negotiated by TLS ALPN (h2); use HTTP/1.1 here")
			return
		}
		s.h2Streams.Add(1)
	}
	// Requests inside a tunnel were authorized with its CONNECT, and
	// belong to its job.
	if tun == nil {
		job, ok := s.authorize(w, r)
		if !ok {
			return
		}
		if job != nil {
			r = r.WithContext(context.WithValue(r.Context(), jobKey{}, job))
		}
	}
	switch {
	case r.Method == methodWriteRecord || r.Method == methodPutMeta:
		uri := r.RequestURI
		if tun != nil && strings.HasPrefix(uri, "/") {
			uri = (&target{scheme: tun.scheme, hostport: tun.authority, requestURI: uri}).uri()
		}
		s.writeRecord(w, r, uri)
	case r.Method == http.MethodConnect && tun != nil:
		textError(w, http.StatusBadRequest, "warcproxy: CONNECT inside a CONNECT tunnel is not supported")
	case r.Method == http.MethodConnect:
		s.handleConnect(w, r)
	case tun != nil:
		t := target{scheme: tun.scheme, hostport: tun.authority, host: tun.host, tun: tun, requestURI: r.RequestURI}
		if !strings.HasPrefix(t.requestURI, "/") && t.requestURI != "*" {
			t.requestURI = originForm(r.RequestURI)
		}
		s.serveForward(w, r, &t)
	case r.URL.IsAbs():
		t, ok := absoluteTarget(w, r)
		switch {
		case !ok:
		case s.isSelf(t.hostport):
			// http://proxy-address/status: answer here, never loop.
			s.serveLocal(w, r)
		default:
			s.serveForward(w, r, &t)
		}
	default:
		s.serveLocal(w, r)
	}
}

// absoluteTarget is where an absolute-form request goes; it answers 400
// itself when the URL cannot be fetched.
func absoluteTarget(w http.ResponseWriter, r *http.Request) (target, bool) {
	switch {
	case r.URL.Scheme != "http" && r.URL.Scheme != "https":
		textError(w, http.StatusBadRequest, "warcproxy: unsupported URL scheme "+strconv.Quote(r.URL.Scheme))
		return target{}, false
	case r.URL.Host == "":
		textError(w, http.StatusBadRequest, "warcproxy: request URL has no host")
		return target{}, false
	case !httpguts.ValidHostHeader(r.URL.Host):
		// What net/http refuses in a Host header, such as a name in UTF-8
		// rather than its IDNA (xn--) form, is refused here too: it would
		// be sent upstream as the Host and be the record's WARC-Target-URI.
		textError(w, http.StatusBadRequest, "warcproxy: request URL has an invalid host "+strconv.Quote(r.URL.Host))
		return target{}, false
	}
	if p := r.URL.Port(); p != "" && !validPort(p) {
		textError(w, http.StatusBadRequest, "warcproxy: request URL has an invalid port "+strconv.Quote(p))
		return target{}, false
	}
	t := target{scheme: r.URL.Scheme, requestURI: originForm(r.RequestURI)}
	t.hostport, t.host = withPort(r.URL.Host, t.scheme)
	return t, true
}

// serveForward forwards a request, then runs the byte tunnel of a 101
// Switching Protocols answer, outside the in-flight accounting that
// shutdown waits for.
func (s *Server) serveForward(w http.ResponseWriter, r *http.Request, t *target) {
	if splice := s.forward(w, r, t); splice != nil {
		splice()
	}
}

// originForm cuts "scheme://authority" off an absolute-form request target,
// keeping the rest exactly as the client sent it.
func originForm(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "/"
	}
	rest := raw[i+3:]
	j := strings.IndexAny(rest, "/?")
	if j < 0 {
		return "/"
	}
	if rest[j] == '?' {
		return "/" + rest[j:]
	}
	return rest[j:]
}

// withPort returns host:port (adding the scheme's default port) and host.
func withPort(authority, scheme string) (hostport, host string) {
	if h, p, err := net.SplitHostPort(authority); err == nil && p != "" {
		return net.JoinHostPort(h, p), h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]")
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(host, port), host
}

// tunnelConn is what a request inside a CONNECT tunnel brings to its
// fetch: the origin connection dialed at CONNECT time (for the tunnel's
// own host, once) and the server name the client sent.
func (t *target) tunnelConn() (pre net.Conn, sni string) {
	if t.tun == nil {
		return nil, ""
	}
	if t.tun.authority == t.hostport {
		pre = t.tun.takePreconn()
	}
	return pre, t.tun.sni
}
