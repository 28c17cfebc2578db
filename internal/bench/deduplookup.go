package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/warcproxy/warcproxy/dedup"
)

// dedupSampleSize is how many saved digests are kept for the hits.
const dedupSampleSize = 100_000

// lookupStats is what one round of lookups measured.
type lookupStats struct {
	keys                            int64
	hist                            Histogram // per batch
	elapsed                         time.Duration
	hitsAsked, hitsFound, falseHits int64
}

// lookups looks up cfg.Lookups keys in batches of 1..MaxLookupBatch,
// dedup.DefaultLookupers batches in flight, as the Index's lookupers ask
// the store: HitRatio of the keys saved digests, the rest new ones.
func (r *dedupRun) lookups(ctx context.Context) (*lookupStats, error) {
	ls := &lookupStats{}
	total := int64(r.cfg.Lookups)
	r.live.set(fmt.Sprintf("%s lookups at %s", r.backend, FormatCount(r.entries)), 0, total)
	var left atomic.Int64
	left.Store(total)
	var mu sync.Mutex
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range dedup.DefaultLookupers {
		gen := r.newGen()
		g.Go(func() error {
			var w lookupStats
			defer func() {
				mu.Lock()
				ls.hist.Merge(&w.hist)
				ls.keys += w.keys
				ls.hitsAsked += w.hitsAsked
				ls.hitsFound += w.hitsFound
				ls.falseHits += w.falseHits
				mu.Unlock()
			}()
			keys := make([]dedup.Key, 0, r.cfg.MaxLookupBatch)
			hit := make([]bool, 0, r.cfg.MaxLookupBatch)
			for gctx.Err() == nil {
				want := int64(1 + gen.rng.IntN(r.cfg.MaxLookupBatch))
				n := min(want, left.Add(-want)+want)
				if n <= 0 {
					return nil
				}
				keys, hit = keys[:0], hit[:0]
				for range n {
					k, ok := dedup.Key{}, false
					if gen.rng.Float64() < r.cfg.HitRatio {
						k, ok = r.sample.pick(gen.rng)
					}
					if !ok {
						k = dedup.Key{Digest: gen.digest(), URL: gen.url()}
					}
					keys = append(keys, k)
					hit = append(hit, ok)
				}
				t0 := time.Now()
				res, err := r.store.Lookup(gctx, keys)
				w.hist.Record(time.Since(t0))
				if err != nil {
					return fmt.Errorf("looking up a batch of %d: %w", n, err)
				}
				w.keys += n
				r.live.done.Add(n)
				for i, e := range res {
					switch {
					case hit[i]:
						w.hitsAsked++
						if e != nil {
							w.hitsFound++
						}
					case e != nil:
						w.falseHits++
					}
				}
			}
			return nil
		})
	}
	err := g.Wait()
	ls.elapsed = time.Since(start)
	return ls, err
}

// reservoir keeps a uniform sample of the keys saved (Algorithm R), so
// that hits are spread over the whole index in little memory. A key keeps
// its entry's URL: a hit is the same URL fetched again, the common case,
// which a compact layout answers without reading the full URL.
type reservoir struct {
	mu   sync.RWMutex
	keep []dedup.Key
	seen int64
	rng  *rand.Rand
}

func newReservoir(n int) *reservoir {
	return &reservoir{keep: make([]dedup.Key, 0, n), rng: rand.New(rand.NewPCG(7, 7))}
}

func (s *reservoir) add(items []dedup.Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		s.seen++
		k := dedup.Key{Digest: it.Key.Digest, Bucket: it.Key.Bucket, URL: it.Entry.URL}
		if len(s.keep) < cap(s.keep) {
			s.keep = append(s.keep, k)
		} else if j := s.rng.Int64N(s.seen); j < int64(len(s.keep)) {
			s.keep[j] = k
		}
	}
}

// pick returns a sampled key; false when none is saved yet.
func (s *reservoir) pick(rng *rand.Rand) (dedup.Key, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.keep) == 0 {
		return dedup.Key{}, false
	}
	return s.keep[rng.IntN(len(s.keep))], true
}
