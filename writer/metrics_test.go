package writer

import (
	"bytes"
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// TestMetricsPedantic: the pool's metrics pass the pedantic registry's
// consistency checks and the linter, and count what was written.
func TestMetricsPedantic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, err := New(Options{Dir: t.TempDir(), Workers: 2, Compression: warcscan.Gzip, Registerer: reg}, nil)
	require.NoError(t, err)
	block := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	for range 3 {
		require.NoError(t, p.Enqueue(context.Background(), &Capture{Records: []Record{
			{Type: "response", TargetURI: "http://example.org/", Block: bytes.NewReader(block), BlockLength: int64(len(block))},
		}}))
	}
	require.NoError(t, p.Close(context.Background()))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)

	values := map[string]float64{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				values[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				values[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				values[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	require.Equal(t, 3.0, values["warcproxy_writer_records_total/response"])
	require.Equal(t, 3.0, values["warcproxy_writer_captures_total/written"])
	require.Equal(t, 3.0+values["warcproxy_writer_files_closed_total"], values["warcproxy_writer_gzip_members_total/level"], "small blocks and warcinfo records get the configured level")
	require.Equal(t, 3.0, values["warcproxy_writer_write_duration_seconds"])
	require.Equal(t, float64(p.Stats().BytesWritten), values["warcproxy_writer_bytes_total"])
	require.Equal(t, values["warcproxy_writer_files_closed_total"], values["warcproxy_writer_records_total/warcinfo"], "one warcinfo per file")
	require.Equal(t, float64(DefaultQueueSize), values["warcproxy_writer_queue_capacity"])
}
