package upload

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// failureReasons label warcproxy_upload_failures_total, in this order.
var failureReasons = []string{ReasonRefused, ReasonSlowDown, ReasonTimeout, ReasonStore, ReasonNetwork,
	ReasonConflict, ReasonVerify, ReasonLocal}

var kinds = []string{KindWARC, KindCDXJ, KindCrawlLog}

// metrics are the shipper's Prometheus metrics, read at scrape time.
type metrics struct {
	s        *Shipper
	duration prometheus.Histogram

	mu       sync.Mutex
	files    map[string]uint64 // by kind
	bytes    map[string]uint64
	failures map[string]uint64 // by reason

	abortedUploads atomic.Uint64
	eventsSent     atomic.Uint64
	eventsFailed   atomic.Uint64

	filesD, bytesD, failuresD, backlogFilesD, backlogBytesD, oldestD, abortedD, eventsD *prometheus.Desc
}

func newMetrics(s *Shipper) *metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("warcproxy_upload_"+name, help, labels, nil)
	}
	return &metrics{
		s: s,
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_upload_duration_seconds",
			Help:    "Time to ship one file: hash, upload, confirm (retries not included).",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10), // 10ms .. 44min
		}),
		files:         map[string]uint64{},
		bytes:         map[string]uint64{},
		failures:      map[string]uint64{},
		filesD:        d("files_total", "Files shipped and confirmed by the store, by kind (warc, cdxj, crawllog).", "kind"),
		bytesD:        d("bytes_total", "Bytes of the files shipped and confirmed, by kind.", "kind"),
		failuresD:     d("failures_total", "Failed store calls and files not shipped, by reason: refused, slowdown, timeout, store, network, conflict, verify, local.", "reason"),
		backlogFilesD: d("backlog_files", "Closed files waiting to be shipped (queued or in flight)."),
		backlogBytesD: d("backlog_bytes", "Bytes of the closed files waiting to be shipped."),
		oldestD:       d("oldest_waiting_seconds", "Age of the oldest closed file waiting to be shipped (0 when none waits)."),
		abortedD:      d("aborted_multipart_uploads_total", "Multipart uploads left by an earlier run and aborted at start."),
		eventsD:       d("events_total", "Completion events (--upload-webhook) by result: sent (acknowledged), failed (retried).", "result"),
	}
}

func (m *metrics) shipped(kind string, size int64, took time.Duration) {
	m.mu.Lock()
	m.files[kind]++
	m.bytes[kind] += uint64(size)
	m.mu.Unlock()
	m.duration.Observe(took.Seconds())
}

func (m *metrics) failed(reason string) {
	m.mu.Lock()
	m.failures[reason]++
	m.mu.Unlock()
}

// Collector returns the shipper's metrics, to register.
func (s *Shipper) Collector() prometheus.Collector { return s.metrics }

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	for _, d := range []*prometheus.Desc{m.filesD, m.bytesD, m.failuresD, m.backlogFilesD, m.backlogBytesD, m.oldestD, m.abortedD, m.eventsD} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.mu.Lock()
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(m.filesD, prometheus.CounterValue, float64(m.files[k]), k)
		ch <- prometheus.MustNewConstMetric(m.bytesD, prometheus.CounterValue, float64(m.bytes[k]), k)
	}
	for _, r := range failureReasons {
		ch <- prometheus.MustNewConstMetric(m.failuresD, prometheus.CounterValue, float64(m.failures[r]), r)
	}
	m.mu.Unlock()
	files, bytes := m.s.Backlog()
	ch <- prometheus.MustNewConstMetric(m.backlogFilesD, prometheus.GaugeValue, float64(files))
	ch <- prometheus.MustNewConstMetric(m.backlogBytesD, prometheus.GaugeValue, float64(bytes))
	age := 0.0
	if t := m.s.Oldest(); !t.IsZero() {
		age = time.Since(t).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(m.oldestD, prometheus.GaugeValue, age)
	ch <- prometheus.MustNewConstMetric(m.abortedD, prometheus.CounterValue, float64(m.abortedUploads.Load()))
	ch <- prometheus.MustNewConstMetric(m.eventsD, prometheus.CounterValue, float64(m.eventsSent.Load()), "sent")
	ch <- prometheus.MustNewConstMetric(m.eventsD, prometheus.CounterValue, float64(m.eventsFailed.Load()), "failed")
}

func (m *metrics) event(sent bool) {
	if sent {
		m.eventsSent.Add(1)
	} else {
		m.eventsFailed.Add(1)
	}
}

// Stats is the shipper's state for /status.
type Stats struct {
	Target       string            `json:"target"`
	BacklogFiles int               `json:"backlog_files"`
	BacklogBytes int64             `json:"backlog_bytes"`
	OldestSecs   float64           `json:"oldest_waiting_seconds"`
	Files        map[string]uint64 `json:"files_shipped"`
	Bytes        map[string]uint64 `json:"bytes_shipped"`
	Failures     map[string]uint64 `json:"failures"`
}

// Stats reports what the shipper has done and what waits.
func (s *Shipper) Stats() Stats {
	st := Stats{Target: s.opts.Target.String(), Files: map[string]uint64{}, Bytes: map[string]uint64{}, Failures: map[string]uint64{}}
	st.BacklogFiles, st.BacklogBytes = s.Backlog()
	if t := s.Oldest(); !t.IsZero() {
		st.OldestSecs = time.Since(t).Seconds()
	}
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.files {
		st.Files[k] = v
	}
	for k, v := range m.bytes {
		st.Bytes[k] = v
	}
	for k, v := range m.failures {
		st.Failures[k] = v
	}
	return st
}
