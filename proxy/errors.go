package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/warcproxy/warcproxy/capture"
	"github.com/warcproxy/warcproxy/wire"
)

// noteUpstreamError counts and logs a fetch (or CONNECT) that got no
// response; it returns what classifyUpstreamError says about err.
func (s *Server) noteUpstreamError(target string, err error) (status int, kind, label string) {
	status, kind, label = classifyUpstreamError(err)
	s.metrics.upstreamError(label)
	var re *wire.RouteError
	if errors.As(err, &re) {
		s.metrics.routeError(re.Route, re.Reason)
	}
	s.logger.Info("upstream error", "target", target, "kind", kind, "err", err)
	return status, kind, label
}

// upstreamMessage is the text of the error answer for a fetch ("fetching")
// or CONNECT ("connecting to") of target that failed with err. A route
// failure names the route first: it is the route the operator must fix.
func upstreamMessage(kind, verb, target string, err error) string {
	var re *wire.RouteError
	if errors.As(err, &re) {
		return fmt.Sprintf("warcproxy: %v (%s %s)", err, verb, target)
	}
	return fmt.Sprintf("warcproxy: %s %s %s: %v", kind, verb, target, err)
}

// classifyUpstreamError gives the status for the client, a phrase for the
// message and the kind label for the metric.
func classifyUpstreamError(err error) (status int, phrase, kind string) {
	var dnsErr *net.DNSError
	var tlsErr *wire.TLSError
	var ne net.Error
	var cbe *wire.ClientBodyError
	var re *wire.RouteError
	switch {
	case errors.Is(err, wire.ErrPrivateTarget), errors.Is(err, errSelfTarget):
		return http.StatusForbidden, "refused", "denied"
	case errors.As(err, &re):
		if re.Timeout() {
			return http.StatusGatewayTimeout, "upstream route timeout", "route"
		}
		return http.StatusBadGateway, "upstream route failed", "route"
	case errors.As(err, &cbe):
		if errors.As(err, &ne) && ne.Timeout() {
			return http.StatusRequestTimeout, "client stalled sending the request body", "client"
		}
		return http.StatusBadRequest, "client error", "client"
	case errors.As(err, &dnsErr):
		if dnsErr.IsTimeout {
			return http.StatusGatewayTimeout, "DNS timeout", capture.FailDNS
		}
		return http.StatusBadGateway, "DNS lookup failed", capture.FailDNS
	case errors.As(err, &tlsErr):
		if errors.As(err, &ne) && ne.Timeout() {
			return http.StatusGatewayTimeout, "TLS handshake timeout", capture.FailTimeout
		}
		return http.StatusBadGateway, "TLS handshake failed", "tls"
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusGatewayTimeout, "upstream timeout", capture.FailTimeout
	case errors.Is(err, wire.ErrResponseHeadTooLarge), errors.Is(err, wire.ErrNotHTTP), errors.Is(err, wire.ErrTooManyInterim),
		errors.Is(err, wire.ErrUnaskedUpgrade):
		return http.StatusBadGateway, "bad upstream response", "bad_response"
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"):
		return http.StatusBadGateway, "connection refused", capture.FailRefused
	}
	return http.StatusBadGateway, "upstream error", "other"
}

func textError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}
