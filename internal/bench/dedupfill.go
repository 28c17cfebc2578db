package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/warcproxy/warcproxy/dedup"
)

// saveWindowMin is the fewest entries, at the end of a fill step, whose
// save batches are timed (the step's last tenth when that is more): the
// batches just before a size is reached, not the ones of a smaller index.
const saveWindowMin = 50_000

// fillStats is what one fill step measured.
type fillStats struct {
	saved         int64
	elapsed       time.Duration
	window        Histogram // save batch times of the step's last batches
	windowEntries int64
	windowTime    time.Duration // from the first of those batches' start to the last's end
}

// fill saves fresh entries in batches of SaveBatch, InFlight at a time,
// until the store holds size entries or the deadline passes. The step's
// last batches (its last tenth, at least saveWindowMin entries) go one at
// a time, as the Index's single flusher sends them, and are timed: their
// time and throughput are what the proxy's write-behind gets at that size,
// not a queue behind other batches. Entries are
// made as they are sent, so that the bench's memory stays flat; only a
// sample of their digests is kept.
func (r *dedupRun) fill(ctx context.Context, size int64) (*fillStats, error) {
	fs := &fillStats{}
	todo := size - r.entries
	if todo <= 0 {
		return fs, nil
	}
	batch := int64(r.cfg.SaveBatch)
	nb := (todo + batch - 1) / batch
	window := max(todo/10, saveWindowMin)
	winFirst := max(nb-(window+batch-1)/batch, 0)
	label := fmt.Sprintf("%s fill to %s", r.backend, FormatCount(size))
	r.live.set(label, r.entries, size)

	var (
		next     atomic.Int64
		mu       sync.Mutex // guards the fields below and fs.window
		oneByOne sync.Mutex // held by a window batch while it is saved
		winStart time.Time
		winEnd   time.Time
	)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range r.cfg.InFlight {
		gen := r.newGen()
		g.Go(func() error {
			var hist Histogram
			var saved, winEntries int64
			defer func() {
				mu.Lock()
				fs.window.Merge(&hist)
				fs.saved += saved
				fs.windowEntries += winEntries
				mu.Unlock()
			}()
			items := make([]dedup.Item, 0, batch)
			for {
				i := next.Add(1) - 1
				if i >= nb || gctx.Err() != nil || time.Now().After(r.deadline) {
					return nil
				}
				n := min(batch, todo-i*batch)
				items = items[:0]
				for range n {
					items = append(items, gen.item())
				}
				r.sample.add(items)
				inWindow := i >= winFirst
				if inWindow {
					oneByOne.Lock()
				}
				t0 := time.Now()
				err := r.store.Save(gctx, items)
				t1 := time.Now()
				if inWindow {
					oneByOne.Unlock()
				}
				if err != nil {
					return fmt.Errorf("saving a batch of %d: %w", n, err)
				}
				saved += n
				r.live.done.Add(n)
				if inWindow {
					hist.Record(t1.Sub(t0))
					winEntries += n
					mu.Lock()
					if winStart.IsZero() || t0.Before(winStart) {
						winStart = t0
					}
					winEnd = later(winEnd, t1)
					mu.Unlock()
				}
			}
		})
	}
	err := g.Wait()
	fs.elapsed = time.Since(start)
	r.entries += fs.saved
	if !winStart.IsZero() {
		fs.windowTime = winEnd.Sub(winStart)
	}
	return fs, err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
