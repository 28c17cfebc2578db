package proxy

import "net/http"

// serveLocal answers origin-form requests addressed to the proxy itself.
func (s *Server) serveLocal(w http.ResponseWriter, r *http.Request) {
	if r.Method == "PRI" {
		textError(w, http.StatusHTTPVersionNotSupported, "warcproxy: HTTP/2 is not supported yet; use HTTP/1.1")
		return
	}
	switch r.URL.Path {
	case "/status", "/metrics":
		s.serveEndpoint(w, r)
	default:
		textError(w, http.StatusNotFound, "warcproxy: this is a recording proxy; configure it as your client's HTTP and HTTPS proxy."+s.endpointsShown())
	}
}

// serveEndpoint serves /status or /metrics on the proxy port, or says
// where they are served instead.
func (s *Server) serveEndpoint(w http.ResponseWriter, r *http.Request) {
	h := s.opts.Status
	if r.URL.Path == "/metrics" {
		h = s.opts.Metrics
	}
	switch {
	case s.opts.MetricsAddress != "":
		textError(w, http.StatusNotFound, "warcproxy: "+r.URL.Path+" is served on --metrics-address "+s.opts.MetricsAddress+", not on the proxy port")
	case h == nil:
		textError(w, http.StatusNotFound, "warcproxy: "+r.URL.Path+" is off")
	default:
		h.ServeHTTP(w, r)
	}
}

// endpointsShown is what the proxy port's 404 page says about /status
// and /metrics: listed when served here, else where they are.
func (s *Server) endpointsShown() string {
	if s.opts.MetricsAddress != "" {
		return " /status and /metrics are served on --metrics-address " + s.opts.MetricsAddress + "."
	}
	var shown string
	for _, e := range []struct {
		path string
		h    http.Handler
	}{{"/status", s.opts.Status}, {"/metrics", s.opts.Metrics}} {
		if e.h == nil {
			continue
		}
		if shown == "" {
			shown = " Local endpoints: " + e.path
		} else {
			shown += ", " + e.path
		}
	}
	return shown
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
	if jobs := s.jobsStatus(); jobs != nil {
		st["jobs"] = jobs
	}
	if addr := s.addr.Load(); addr != nil {
		st["address"] = addr.IP.String()
		st["port"] = addr.Port
	}
	return st
}
