package dedup

import "github.com/prometheus/client_golang/prometheus"

// cdxMetrics are the CDX client's Prometheus metrics.
type cdxMetrics struct {
	c        *CDX
	duration prometheus.Histogram
	errors   *prometheus.CounterVec
	inFlight *prometheus.Desc
	lookups  *prometheus.Desc
	cacheHit *prometheus.Desc
	prefetch *prometheus.Desc
}

func newCDXMetrics(c *CDX) *cdxMetrics {
	m := &cdxMetrics{
		c: c,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_dedup_cdx_request_duration_seconds",
			Help:    "Time one CDX server dedup request took, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8), // 0.5ms .. 8s
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_dedup_cdx_errors_total",
			Help: "CDX server dedup lookups that failed (the capture was written in full), by reason: busy, timeout, connect, status, bad_answer, too_large, digest.",
		}, []string{"reason"}),
		inFlight: prometheus.NewDesc("warcproxy_dedup_cdx_requests_in_flight",
			"CDX server dedup requests being sent or waited for.", nil, nil),
		lookups: prometheus.NewDesc("warcproxy_dedup_cdx_lookups_total",
			"CDX server dedup lookups by result: hit, miss, error, skipped (no URL, or a session id in it).", []string{"result"}, nil),
		cacheHit: prometheus.NewDesc("warcproxy_dedup_cdx_cache_hits_total",
			"CDX server dedup lookups answered from the cache of recent answers.", nil, nil),
		prefetch: prometheus.NewDesc("warcproxy_dedup_cdx_prefetches_total",
			"CDX queries for archived requests by what became of them when the request arrived: sent (ahead of the payload), busy (no free request slot: the lookup asks after the fetch).", []string{"result"}, nil),
	}
	for _, r := range cdxReasons {
		m.errors.WithLabelValues(r)
	}
	return m
}

func (m *cdxMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.errors.Describe(ch)
	ch <- m.inFlight
	ch <- m.lookups
	ch <- m.cacheHit
	ch <- m.prefetch
}

func (m *cdxMetrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.errors.Collect(ch)
	c := m.c
	ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, float64(len(c.slots)))
	for _, r := range []struct {
		label string
		v     uint64
	}{{"hit", c.hits.Load()}, {"miss", c.misses.Load()}, {"error", c.errs.Load()}, {"skipped", c.skipped.Load()}} {
		ch <- prometheus.MustNewConstMetric(m.lookups, prometheus.CounterValue, float64(r.v), r.label)
	}
	ch <- prometheus.MustNewConstMetric(m.cacheHit, prometheus.CounterValue, float64(c.cacheHits.Load()))
	ch <- prometheus.MustNewConstMetric(m.prefetch, prometheus.CounterValue, float64(c.prefetched.Load()), "sent")
	ch <- prometheus.MustNewConstMetric(m.prefetch, prometheus.CounterValue, float64(c.prefetchBusy.Load()), "busy")
}
