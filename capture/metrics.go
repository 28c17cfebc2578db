package capture

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

// count records how an exchange ended.
func (s *Stage) count(o outcome) { s.outcomes[o].Add(1) }

// metrics are the stage's Prometheus metrics. The names keep the proxy_
// subsystem they had before the stage had a package of its own, so
// dashboards and alerts stay valid.
type metrics struct {
	captureDuration prometheus.Histogram
}

func newMetrics(s *Stage, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		captureDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_proxy_capture_duration_seconds",
			Help:    "From the start of a request to its records handed to the OS in a WARC file.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5ms .. 131s
		}),
	}
	collectors := []prometheus.Collector{
		m.captureDuration,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "warcproxy_proxy_seconds_behind",
			Help: "Age of the oldest exchange not yet written to a WARC file (in flight or queued); 0 when none (warcprox's seconds_behind).",
		}, func() float64 { return s.secondsBehind() }),
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

func (m *metrics) captured(start time.Time) {
	if m != nil {
		m.captureDuration.Observe(time.Since(start).Seconds())
	}
}

// secondsBehind is the age of the oldest exchange not yet written.
func (s *Stage) secondsBehind() float64 {
	if t, ok := s.active.earliest(); ok {
		return time.Since(t).Seconds()
	}
	return 0
}
