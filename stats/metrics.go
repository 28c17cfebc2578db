package stats

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Tracker's Prometheus metrics.
type metrics struct {
	flushes       prometheus.Counter
	flushErrors   prometheus.Counter
	flushDuration prometheus.Histogram
	readErrors    prometheus.Counter
}

func newMetrics(t *Tracker, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		flushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_stats_flushes_total",
			Help: "Batches of stats increments sent to the stats store (one store write each), failed ones included.",
		}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_stats_flush_errors_total",
			Help: "Batches of stats increments the store refused or did not answer; they are kept in memory and retried.",
		}),
		flushDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_stats_flush_duration_seconds",
			Help:    "Time to write one batch of stats increments to the store.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10), // 0.1ms .. 26s
		}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_stats_read_errors_total",
			Help: "Failed reads of a bucket from the stats store (a cached value, if any, was used instead).",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{
		m.flushes, m.flushErrors, m.flushDuration, m.readErrors,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "warcproxy_stats_buckets_tracked",
			Help: "Stats buckets held in memory.",
		}, func() float64 { return float64(t.nBuckets.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "warcproxy_stats_buckets_unflushed",
			Help: "Stats buckets with written captures not yet stored.",
		}, func() float64 { return float64(t.unflushed()) }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("stats: registering metrics: %w", err)
		}
	}
	return m, nil
}
