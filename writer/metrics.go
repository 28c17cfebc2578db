package writer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the pool's Prometheus metrics. Counters are read from the
// pool's own atomics at scrape time, so the write path pays nothing for
// them; only the write duration is observed as it happens.
type metrics struct {
	p            *Pool
	writeSeconds prometheus.Histogram

	records      *prometheus.Desc
	members      *prometheus.Desc
	frames       *prometheus.Desc
	bytes        *prometheus.Desc
	captures     *prometheus.Desc
	queueLength  *prometheus.Desc
	queueCap     *prometheus.Desc
	queueFullFor *prometheus.Desc
	filesOpen    *prometheus.Desc
	filesClosed  *prometheus.Desc
	writeErrors  *prometheus.Desc
}

func newMetrics(p *Pool) *metrics {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("warcproxy_writer_"+name, help, labels, nil)
	}
	return &metrics{
		p: p,
		writeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warcproxy_writer_write_duration_seconds",
			Help:    "Time a worker takes to write one capture's records (serialize, compress, buffer; the flush to the OS is batched).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10), // 50µs .. 13s
		}),
		records:      d("records_total", "WARC records written, by WARC-Type (warcinfo included).", "type"),
		members:      d("gzip_members_total", "Gzip members (one per record) by how their block was compressed: level (--gzip-level), huffman (Huffman-only), stored, parallel (--gzip-level on several cores).", "compression"),
		frames:       d("zstd_frames_total", "Zstd frames (one per record) by how they were compressed: level (--zstd-level), parallel (--zstd-level on several cores).", "compression"),
		bytes:        d("bytes_total", "Bytes written to WARC files, after compression."),
		captures:     d("captures_total", "Captures by outcome: written, failed (block unreadable), dropped (forced shutdown).", "result"),
		queueLength:  d("queue_length", "Captures waiting in the writer queue."),
		queueCap:     d("queue_capacity", "Capacity of the writer queue (--queue-size)."),
		queueFullFor: d("queue_full_seconds", "How long the queue has been continuously full (0 when not full)."),
		filesOpen:    d("files_open", "WARC files open for writing."),
		filesClosed:  d("files_closed_total", "WARC files closed and renamed."),
		writeErrors:  d("write_errors_total", "Failed writes, syncs, renames and file creations (each retried)."),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.writeSeconds.Describe(ch)
	for _, d := range []*prometheus.Desc{m.records, m.members, m.frames, m.bytes, m.captures, m.queueLength, m.queueCap,
		m.queueFullFor, m.filesOpen, m.filesClosed, m.writeErrors} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.writeSeconds.Collect(ch)
	st := &m.p.stats
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	for i, t := range recordTypes {
		counter(m.records, st.records[i].Load(), t)
	}
	for i, k := range memberKinds {
		counter(m.members, st.members[i].Load(), k)
	}
	for i, k := range frameKinds {
		counter(m.frames, st.frames[i].Load(), k)
	}
	counter(m.bytes, st.bytes.Load())
	counter(m.captures, st.capturesWritten.Load(), "written")
	counter(m.captures, st.capturesFailed.Load(), "failed")
	counter(m.captures, st.capturesDropped.Load(), "dropped")
	gauge(m.queueLength, float64(len(m.p.queue)))
	gauge(m.queueCap, float64(cap(m.p.queue)))
	gauge(m.queueFullFor, m.p.FullFor().Seconds())
	gauge(m.filesOpen, float64(st.filesOpen.Load()))
	counter(m.filesClosed, st.filesClosed.Load())
	counter(m.writeErrors, st.writeErrors.Load())
}

// observeWrite records how long a capture took to write.
func (m *metrics) observeWrite(start time.Time) {
	if m != nil {
		m.writeSeconds.Observe(time.Since(start).Seconds())
	}
}
