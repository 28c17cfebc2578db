package stats_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// benchStore opens a store of the named kind for a benchmark.
func benchStore(b *testing.B, kind string) stats.Store {
	b.Helper()
	var raw string
	switch kind {
	case "memory":
		return nil
	case "embedded":
		raw = "embedded:" + filepath.Join(b.TempDir(), "w.db")
	case "redis":
		raw = redistest.URL(b)
	}
	spec, err := store.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	s, err := stats.Open(spec, &store.Handles{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchTracker(b *testing.B, kind string) *stats.Tracker {
	b.Helper()
	tr, err := stats.NewTracker(benchStore(b, kind), stats.Options{}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := tr.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return tr
}

func benchBuckets(b *testing.B) []string {
	b.Helper()
	m, err := warcproxmeta.Parse(`{"stats":{"buckets":[{"bucket":"job1","tally-domains":["example.com"]}]}}`)
	if err != nil {
		b.Fatal(err)
	}
	return stats.Buckets("http://www.example.com/", m) // 3 buckets
}

// BenchmarkTally: captures tallied (3 buckets each) and reported written,
// from parallel callers, with the background flush (default interval)
// storing them.
func BenchmarkTally(b *testing.B) {
	for _, kind := range []string{"memory", "embedded", "redis"} {
		b.Run("backend="+kind, func(b *testing.B) {
			tr := benchTracker(b, kind)
			in := benchBuckets(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tr.Tally(in, stats.New, 1000).Written()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tallies/s")
		})
	}
}

// BenchmarkGet: bucket reads from parallel callers, as limit checks do
// before every request (Redis: re-read once a second).
func BenchmarkGet(b *testing.B) {
	for _, kind := range []string{"memory", "embedded", "redis"} {
		b.Run("backend="+kind, func(b *testing.B) {
			ctx := context.Background()
			tr := benchTracker(b, kind)
			in := benchBuckets(b)
			tr.Tally(in, stats.New, 1000).Written()
			if err := tr.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := tr.Get(ctx, "job1:example.com"); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
		})
	}
}

// BenchmarkStoreAdd: one store write of a batch of 3 buckets, what each
// flush costs.
func BenchmarkStoreAdd(b *testing.B) {
	for _, kind := range []string{"embedded", "redis"} {
		b.Run("backend="+kind, func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b, kind)
			defer s.Close()
			d := stats.Bucket{Total: stats.Counts{URLs: 1, WireBytes: 1000}, New: stats.Counts{URLs: 1, WireBytes: 1000}}
			deltas := map[string]stats.Bucket{"__all__": d, "job1": d, "job1:example.com": d}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Add(ctx, deltas); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuckets: naming the buckets of a request with tally-domains
// (host and domain normalisation, IDNA included).
func BenchmarkBuckets(b *testing.B) {
	m, err := warcproxmeta.Parse(`{"stats":{"buckets":["crawl",{"bucket":"job1","tally-domains":["example.com","bücher.example"]}]}}`)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		stats.Buckets("https://www.Example.com:8443/a/b?c", m)
	}
}
