package dedup

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Index's Prometheus metrics. Counters and gauges are read
// from the Index's atomics and buffers at scrape time, so that /status and
// /metrics agree; the batch histograms are observed as batches complete.
type metrics struct {
	ix            *Index
	lookupSeconds prometheus.Histogram
	lookupKeys    prometheus.Histogram
	saveSeconds   prometheus.Histogram

	lookups      *prometheus.Desc
	saves        *prometheus.Desc
	saveErrors   *prometheus.Desc
	dropped      *prometheus.Desc
	pending      *prometheus.Desc
	lookupQueued *prometheus.Desc
	circuitOpen  *prometheus.Desc
}

func newMetrics(ix *Index) *metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("warcproxy_dedup_"+name, help, labels, nil)
	}
	return &metrics{
		ix: ix,
		lookupSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_dedup_lookup_batch_duration_seconds",
			Help:    "Time the dedup store takes to answer one batch of lookups.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10), // 50µs .. 13s
		}),
		lookupKeys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_dedup_lookup_batch_keys",
			Help:    "Keys (digest and bucket) asked of the dedup store in one lookup batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 7), // 1 .. 4096
		}),
		saveSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_dedup_save_batch_duration_seconds",
			Help:    "Time the dedup store takes to write one batch of saves (failed attempts included).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}),
		lookups:      d("lookups_total", "Dedup lookups (one per capture looked up) by result: hit, miss, url_unknown (a payload archived before at another URL, in a Redis index without its URL table: a miss, the capture is written in full), error, skipped (not asked: the store kept failing, see warcproxy_dedup_circuit_open).", "result"),
		saves:        d("saves_total", "Dedup entries (one per digest and bucket) written to the store."),
		saveErrors:   d("save_errors_total", "Failed store writes of a batch of dedup entries (each is retried with back-off)."),
		dropped:      d("saves_dropped_total", "Dedup entries dropped unsaved: the save buffer was full, or shutdown could not store them."),
		pending:      d("pending_saves", "Dedup entries buffered or being written, not yet stored."),
		lookupQueued: d("lookup_queue_length", "Dedup lookups waiting for a lookuper."),
		circuitOpen:  d("circuit_open", "1 while dedup lookups are skipped after repeated store failures or time-outs (the store is probed again after a cool-down of 1 s, doubling to 30 s), else 0."),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.lookupSeconds.Describe(ch)
	m.lookupKeys.Describe(ch)
	m.saveSeconds.Describe(ch)
	for _, d := range []*prometheus.Desc{m.lookups, m.saves, m.saveErrors, m.dropped, m.pending, m.lookupQueued, m.circuitOpen} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.lookupSeconds.Collect(ch)
	m.lookupKeys.Collect(ch)
	m.saveSeconds.Collect(ch)
	st := &m.ix.st
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter(m.lookups, st.hits.Load(), "hit")
	counter(m.lookups, st.misses.Load(), "miss")
	counter(m.lookups, st.urlUnknown.Load(), "url_unknown")
	counter(m.lookups, st.lookupErrors.Load(), "error")
	counter(m.lookups, st.skipped.Load(), "skipped")
	counter(m.saves, st.saves.Load())
	counter(m.saveErrors, st.saveErrors.Load())
	counter(m.dropped, st.dropped.Load())
	gauge(m.pending, m.ix.pending())
	gauge(m.lookupQueued, len(m.ix.lookups))
	open := 0
	if m.ix.circuit.state() != circuitClosed {
		open = 1
	}
	gauge(m.circuitOpen, open)
}
