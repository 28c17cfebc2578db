package proxy

import "net/http"

// serveLocal answers origin-form requests addressed to the proxy itself.
func (s *Server) serveLocal(w http.ResponseWriter, r *http.Request) {
	if r.Method == "PRI" {
		textError(w, http.StatusHTTPVersionNotSupported, "warcproxy: HTTP/2 is not supported yet; use HTTP/1.1")
		return
	}
	if s.opts.NoLocalEndpoints && (r.URL.Path == "/status" || r.URL.Path == "/metrics") {
		textError(w, http.StatusNotFound, "warcproxy: /status and /metrics are served on --metrics-address, not on the proxy port")
		return
	}
	switch r.URL.Path {
	case "/status":
		if s.opts.Status == nil {
			textError(w, http.StatusNotFound, "warcproxy: /status is off")
			return
		}
		s.opts.Status.ServeHTTP(w, r)
	case "/metrics":
		if s.opts.Metrics == nil {
			textError(w, http.StatusNotFound, "warcproxy: metrics are off")
			return
		}
		s.opts.Metrics.ServeHTTP(w, r)
	default:
		textError(w, http.StatusNotFound, "warcproxy: this is a recording proxy; configure it as your client's HTTP and HTTPS proxy. Local endpoints: /status, /metrics")
	}
}

// Status is the front end's part of /status, with warcprox's keys.
func (s *Server) Status() map[string]any {
	active, waiting, refused := s.connStats()
	st := map[string]any{
		"active_requests":     s.active.Load() + s.uploads.Load(), // fetches and write-record uploads
		"client_errors":       s.clientErrors.Load(),
		"proxy_auth_failures": s.authFailures.Load(),
		"client_tls_errors":   s.handshakeErrors.Load(),
		"connections_active":  active,
		"connections_waiting": waiting,
		"connections_refused": refused,
		"max_conns":           s.opts.MaxConns,
		"unaccepted_requests": waiting,
		"threads":             s.opts.MaxConns,
	}
	if addr := s.addr.Load(); addr != nil {
		st["address"] = addr.IP.String()
		st["port"] = addr.Port
	}
	return st
}
