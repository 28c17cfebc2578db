package proxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// outcome is how an exchange ended, for /status and the result label of
// warcproxy_proxy_captures_total (both read the same counters).
type outcome int

const (
	archived outcome = iota
	revisit
	notArchived
	failed
	numOutcomes
)

var outcomeLabels = [numOutcomes]string{"archived", "revisit", "not_archived", "failed"}

// upstreamErrorKinds are the kind label values of
// warcproxy_upstream_errors_total, created at start so they read 0.
var upstreamErrorKinds = []string{"dns", "refused", "timeout", "tls", "bad_response", "client", "other"}

// metrics are the proxy's Prometheus metrics: counters it increments on
// the request path, and functions reading state it keeps anyway.
type metrics struct {
	upstreamURLs    prometheus.Counter
	upstreamBytes   prometheus.Counter
	upstreamErrors  *prometheus.CounterVec
	captureDuration prometheus.Histogram
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
			Help: "Requests that got no response from the origin, by kind: dns, refused, timeout, tls, bad_response, client (the client's body failed), other.",
		}, []string{"kind"}),
		captureDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_proxy_capture_duration_seconds",
			Help:    "From the start of a request to its records handed to the OS in a WARC file.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5ms .. 131s
		}),
	}
	for _, k := range upstreamErrorKinds {
		m.upstreamErrors.WithLabelValues(k)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	conn := func(i int) func() float64 {
		return func() float64 {
			a, w, r := s.ConnStats()
			return float64([]int64{a, w, r}[i])
		}
	}
	sp := s.opts.Spooler
	collectors := []prometheus.Collector{
		m.upstreamURLs, m.upstreamBytes, m.upstreamErrors, m.captureDuration,
		gauge("warcproxy_proxy_requests_active", "Exchanges in progress.",
			func() float64 { return float64(s.active.Load()) }),
		gauge("warcproxy_proxy_seconds_behind", "Age of the oldest exchange not yet written to a WARC file (in flight or queued); 0 when none (warcprox's seconds_behind).",
			func() float64 {
				if t, ok := s.activeSet.earliest(); ok {
					return time.Since(t).Seconds()
				}
				return 0
			}),
		counter("warcproxy_proxy_auth_failures_total", "Requests answered 407 for missing or wrong Proxy-Authorization.",
			func() float64 { return float64(s.authFailures.Load()) }),
		gauge("warcproxy_proxy_connections_active", "Client connections holding one of the --max-conns slots.", conn(0)),
		gauge("warcproxy_proxy_connections_waiting", "Client connections waiting for a slot.", conn(1)),
		counter("warcproxy_proxy_connections_refused_total", "Client connections answered 503 because no slot came free in time.", conn(2)),
		counter("warcproxy_proxy_client_errors_total", "Malformed client requests answered by net/http itself (400, 431, ...).",
			func() float64 { return float64(s.clientErrors.Load()) }),
		counter("warcproxy_proxy_client_tls_errors_total", "Failed TLS handshakes with clients in CONNECT tunnels.",
			func() float64 { return float64(s.handshakeErrors.Load()) }),
		counter("warcproxy_proxy_cert_cache_hits_total", "Leaf certificates found in the cache.",
			func() float64 { h, _ := s.opts.CA.CacheStats(); return float64(h) }),
		counter("warcproxy_proxy_cert_cache_misses_total", "Leaf certificates loaded from --certs-dir or generated.",
			func() float64 { _, mi := s.opts.CA.CacheStats(); return float64(mi) }),
		gauge("warcproxy_spool_memory_bytes", "Memory held by captures in progress or queued.",
			func() float64 { return float64(sp.MemoryInUse()) }),
		gauge("warcproxy_spool_memory_budget_bytes", "Memory budget for captures (--spool-memory).",
			func() float64 { return float64(sp.MemoryBudget()) }),
		gauge("warcproxy_spool_disk_bytes", "Capture bytes spilled to temporary files.",
			func() float64 { return float64(sp.DiskInUse()) }),
	}
	for o := range numOutcomes {
		collectors = append(collectors, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "warcproxy_proxy_captures_total",
			Help:        "Exchanges the proxy completed, by result: archived (queued for the writer), revisit, not_archived (--prefix -, --method-filter, warc-prefix -), failed (could not be spooled or queued).",
			ConstLabels: prometheus.Labels{"result": outcomeLabels[o]},
		}, func() float64 { return float64(s.outcomes[o].Load()) }))
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

func (m *metrics) captured(start time.Time) {
	if m != nil {
		m.captureDuration.Observe(time.Since(start).Seconds())
	}
}
