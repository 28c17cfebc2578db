package dedup_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// benchBackends open a fresh, empty Store of each kind.
var benchBackends = []struct {
	name string
	open func(b *testing.B) dedup.Store
}{
	{"embedded", func(b *testing.B) dedup.Store {
		return openSpec(b, "embedded:"+filepath.Join(b.TempDir(), "warcproxy.db"))
	}},
	{"redis", func(b *testing.B) dedup.Store { return openSpec(b, redistest.URL(b)) }},
	{"memory", func(*testing.B) dedup.Store { return &dedupstest.MemStore{} }},
}

func openSpec(b *testing.B, raw string) dedup.Store {
	spec, err := store.Parse(raw)
	require.NoError(b, err)
	s, err := dedup.Open(spec, nil)
	require.NoError(b, err)
	return s
}

// countingStore counts the calls that reach the store.
type countingStore struct {
	dedup.Store
	lookups, saves atomic.Int64
}

func (c *countingStore) Lookup(ctx context.Context, keys []dedup.Key) ([]*dedup.Entry, error) {
	c.lookups.Add(1)
	return c.Store.Lookup(ctx, keys)
}

func (c *countingStore) Save(ctx context.Context, items []dedup.Item) error {
	c.saves.Add(1)
	return c.Store.Save(ctx, items)
}

// BenchmarkIndexLookup: lookups per second through an Index with many
// parallel callers (as many proxy connections), half of them hits, each
// over two buckets of which the second holds the entries.
func BenchmarkIndexLookup(b *testing.B) {
	const stored = 10000
	for _, be := range benchBackends {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("backend=%s/callers=%dxGOMAXPROCS", be.name, par), func(b *testing.B) {
				s := &countingStore{Store: be.open(b)}
				items := make([]dedup.Item, stored)
				for i := range items {
					items[i] = dedup.Item{Key: dedup.Key{Digest: dedupstest.Digest(i), Bucket: "b"}, Entry: dedupstest.Entry(i)}
				}
				require.NoError(b, s.Save(context.Background(), items))
				ix, err := dedup.NewIndex(s, dedup.Options{}, nil, nil)
				require.NoError(b, err)
				defer ix.Close(context.Background())

				var next, hits atomic.Int64
				b.SetParallelism(par)
				b.ReportAllocs()
				b.ResetTimer()
				s.lookups.Store(0)
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					buckets := []string{"a", "b"}
					for pb.Next() {
						i := int(next.Add(1)) % (2 * stored)
						e, _, err := ix.Lookup(ctx, dedupstest.Digest(i), buckets)
						if err != nil {
							b.Error(err)
							return
						}
						if e != nil {
							hits.Add(1)
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
				b.ReportMetric(float64(b.N)/float64(max(1, s.lookups.Load())), "lookups/batch")
				var want int64
				for k := 1; k <= b.N; k++ {
					if k%(2*stored) < stored {
						want++
					}
				}
				if hits.Load() != want {
					b.Fatalf("%d hits of %d lookups, want %d", hits.Load(), b.N, want)
				}
			})
		}
	}
}

// BenchmarkIndexSave: saves per second through an Index with parallel
// callers, each to one bucket, measured until Flush has stored them all.
func BenchmarkIndexSave(b *testing.B) {
	for _, be := range benchBackends {
		b.Run("backend="+be.name, func(b *testing.B) {
			s := &countingStore{Store: be.open(b)}
			// Room for every save: this measures the store, not drops.
			ix, err := dedup.NewIndex(s, dedup.Options{MaxPending: b.N + 1}, nil, nil)
			require.NoError(b, err)
			defer ix.Close(context.Background())

			var next atomic.Int64
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buckets := []string{"b"}
				for pb.Next() {
					i := int(next.Add(1))
					ix.Save(dedupstest.Digest(i), buckets, dedupstest.Entry(i))
				}
			})
			require.NoError(b, ix.Flush(context.Background()))
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
			b.ReportMetric(float64(b.N)/float64(max(1, s.saves.Load())), "saves/batch")
			if d := ix.Status()["dropped_saves"].(uint64); d != 0 {
				b.Fatalf("%d saves dropped", d)
			}
		})
	}
}
