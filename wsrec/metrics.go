package wsrec

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the WebSocket recording's Prometheus metrics, shared by all
// sockets; a nil *Metrics counts nothing.
type Metrics struct {
	open     prometheus.Gauge
	sockets  prometheus.Counter
	messages *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	records  *prometheus.CounterVec
	failures *prometheus.CounterVec
	// The per-message counters of each direction, bound once: a message
	// passes them, and a label lookup per message costs a hash and a lock.
	dirMessages, dirBytes [2]prometheus.Counter
}

// failureReasons are the reason label values of parse failures.
var failureReasons = []string{"frame", "inflate", "too_long", "extension"}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "warcproxy_websocket_sockets_open",
			Help: "WebSockets whose messages are being recorded.",
		}),
		sockets: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warcproxy_websocket_sockets_total",
			Help: "WebSockets whose messages were recorded (opened).",
		}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_websocket_messages_total",
			Help: "WebSocket messages recorded (data messages and control frames), by direction: send (client to server) or recv.",
		}, []string{"direction"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_websocket_message_bytes_total",
			Help: "Payload bytes of the WebSocket messages recorded, unmasked and inflated, by direction.",
		}, []string{"direction"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_websocket_records_total",
			Help: "Message log records handed to the writer, by how they end: complete, or their WARC-Truncated reason (length, time, disconnect, unspecified).",
		}, []string{"end"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warcproxy_websocket_parse_failures_total",
			Help: "WebSockets whose messages could no longer be recorded, by reason: frame (not RFC 6455 framing), inflate (permessage-deflate data that does not inflate), too_long (a message over --websocket-record-size), extension (an extension negotiated that is not understood). Their bytes are still relayed.",
		}, []string{"reason"}),
	}
	for _, d := range []Direction{Send, Recv} {
		m.dirMessages[d] = m.messages.WithLabelValues(d.String())
		m.dirBytes[d] = m.bytes.WithLabelValues(d.String())
	}
	for _, e := range []string{"complete", TruncLength, TruncTime, TruncDisconnect, TruncUnspecified} {
		m.records.WithLabelValues(e)
	}
	for _, r := range failureReasons {
		m.failures.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.open, m.sockets, m.messages, m.bytes, m.records, m.failures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) opened() {
	if m != nil {
		m.open.Inc()
		m.sockets.Inc()
	}
}

func (m *Metrics) closed() {
	if m != nil {
		m.open.Dec()
	}
}

func (m *Metrics) message(d Direction, n int64) {
	if m != nil {
		m.dirMessages[d].Inc()
		m.dirBytes[d].Add(float64(n))
	}
}

func (m *Metrics) record(trunc string) {
	if m != nil {
		if trunc == "" {
			trunc = "complete"
		}
		m.records.WithLabelValues(trunc).Inc()
	}
}

func (m *Metrics) failed(reason string) {
	if m != nil {
		m.failures.WithLabelValues(reason).Inc()
	}
}
