package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/wire"
)

// upstreamErrorKinds are the kind label values of
// warcproxy_upstream_errors_total, created at start so they read 0 (and
// so are the route errors of the routes configured).
var upstreamErrorKinds = []string{"dns", "refused", "timeout", "tls", "bad_response", "client", "route", "other"}

// metrics are the front end's Prometheus metrics: counters it increments on
// the request path, and functions reading state it keeps anyway.
type metrics struct {
	upstreamURLs   prometheus.Counter
	upstreamBytes  prometheus.Counter
	upstreamErrors *prometheus.CounterVec
	routeErrors    *prometheus.CounterVec
}

func newMetrics(s *Server, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		upstreamURLs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_upstream_urls_total",
			Help: "Responses received from origin servers.",
		}),
		upstreamBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_upstream_wire_bytes_total",
			Help: "Bytes of responses read from origin servers as on the wire (status line, headers, framing, body).",
		}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_upstream_errors_total",
			Help: "Requests that got no response from the origin, by kind: dns, refused, timeout, tls, bad_response, client (the client's body failed), route (the SOCKS server or parent proxy failed), other.",
		}, []string{"kind"}),
		routeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_upstream_route_errors_total",
			Help: "Failures of the upstream route itself, by route (socks, tor, parent) and reason (refused, timeout, auth, rejected, dns, other).",
		}, []string{"route", "reason"}),
	}
	for _, k := range upstreamErrorKinds {
		m.upstreamErrors.WithLabelValues(k)
	}
	for _, route := range s.opts.Upstream.RouteKinds() {
		for _, reason := range wire.RouteReasons {
			m.routeErrors.WithLabelValues(route, reason)
		}
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	conn := func(i int) func() float64 {
		return func() float64 {
			a, w, r := s.connStats()
			return float64([]int64{a, w, r}[i])
		}
	}
	collectors := []prometheus.Collector{
		m.upstreamURLs, m.upstreamBytes, m.upstreamErrors, m.routeErrors,
		gauge("warcproxy_proxy_requests_active", "Exchanges in progress.",
			func() float64 { return float64(s.active.Load()) }),
		counter("warcproxy_proxy_auth_failures_total", "Requests answered 407 for missing or wrong Proxy-Authorization.",
			func() float64 { return float64(s.authFailures.Load()) }),
		gauge("warcproxy_proxy_connections_active", "Client connections holding one of the --max-conns slots.", conn(0)),
		gauge("warcproxy_proxy_connections_waiting", "Client connections waiting for a slot.", conn(1)),
		counter("warcproxy_proxy_connections_refused_total", "Client connections answered 503 because no slot came free in time.", conn(2)),
		counter("warcproxy_proxy_client_errors_total", "Malformed client requests answered by net/http itself (400, 431, ...).",
			func() float64 { return float64(s.clientErrors.Load()) }),
		counter("warcproxy_proxy_client_tls_errors_total", "Failed TLS handshakes with clients in CONNECT tunnels.",
			func() float64 { return float64(s.handshakeErrors.Load()) }),
		counter("warcproxy_proxy_http2_connections_total", "Client connections in CONNECT tunnels that negotiated HTTP/2 (ALPN h2).",
			func() float64 { return float64(s.h2Conns.Load()) }),
		counter("warcproxy_proxy_http2_streams_total", "Requests received on HTTP/2 streams (each one exchange).",
			func() float64 { return float64(s.h2Streams.Load()) }),
		jobRequestsCollector{s},
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) response(wireBytes int64) {
	if m != nil {
		m.upstreamURLs.Inc()
		m.upstreamBytes.Add(float64(wireBytes))
	}
}

func (m *metrics) upstreamError(kind string) {
	if m != nil {
		m.upstreamErrors.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) routeError(route, reason string) {
	if m != nil {
		m.routeErrors.WithLabelValues(route, reason).Inc()
	}
}

// jobRequestsCollector reports the requests admitted per job (--jobs),
// every job of the table in force and every job counted since the start.
// The label is crawl_job: Prometheus renames a target's own "job" label.
type jobRequestsCollector struct{ s *Server }

var jobRequestsDesc = prometheus.NewDesc("warcproxy_job_requests_total",
	"Requests admitted per crawl job (--jobs), chosen by proxy credentials or port.", []string{"crawl_job"}, nil)

func (c jobRequestsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- jobRequestsDesc }

func (c jobRequestsCollector) Collect(ch chan<- prometheus.Metric) {
	for name, n := range c.s.jobRequestCounts() {
		ch <- prometheus.MustNewConstMetric(jobRequestsDesc, prometheus.CounterValue, float64(n), name)
	}
}
