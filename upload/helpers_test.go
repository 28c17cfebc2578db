package upload

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/s3test"
)

// rig is a shipper on a real VersityGW, its bucket and --dir.
type rig struct {
	srv    *s3test.Server
	bucket string
	dir    string
	store  *S3
	opts   Options
	logs   *bytes.Buffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	r := &rig{srv: srv, bucket: srv.Bucket(t, "archive"), dir: t.TempDir(), logs: &bytes.Buffer{}}
	r.store = r.newStore(t, srv.Endpoint)
	r.opts = Options{Dir: r.dir, Target: Target{Bucket: r.bucket, Prefix: "crawl/"}, Store: r.store, Workers: 2,
		Logger:   slog.New(slog.NewTextHandler(io.MultiWriter(r.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond}
	return r
}

// newStore is a client of endpoint whose uploads stall after a second
// without progress, or stall when given.
func (r *rig) newStore(t *testing.T, endpoint string, stall ...time.Duration) *S3 {
	t.Helper()
	o := S3Options{Bucket: "archive", Endpoint: endpoint, PartSize: 5 << 20, StallTimeout: time.Second}
	if len(stall) > 0 {
		o.StallTimeout = stall[0]
	}
	st, err := NewS3(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ship runs a shipper over units until they are all done (Close, then
// Run's return), within limit.
func (r *rig) ship(t *testing.T, limit time.Duration, units ...Unit) *Shipper {
	t.Helper()
	s := New(r.opts)
	for _, u := range units {
		s.Add(u)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// file writes n random bytes at dir/rel and returns its path and content.
func (r *rig) file(t *testing.T, rel string, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	path := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// object reads back bucket/key with rclone, the independent client.
func (r *rig) object(t *testing.T, key string) []byte {
	t.Helper()
	dir := r.srv.Download(t, r.bucket, key)
	b, err := os.ReadFile(filepath.Join(dir, filepath.Base(key)))
	if err != nil {
		t.Fatalf("%s not in the bucket: %v", key, err)
	}
	return b
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// metric is the value of warcproxy_upload_NAME whose one label is label
// (or that has none), as a scrape would read it.
func metric(t *testing.T, s *Shipper, name string, label ...string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(s.Collector()))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "warcproxy_upload_"+name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(label) == 0 || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label[0] {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no warcproxy_upload_%s %v", name, label)
	return 0
}
