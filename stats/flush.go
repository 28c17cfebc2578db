package stats

import (
	"context"
	"fmt"
	"time"
)

// Flushing: the increments of captures on disk go to the store in one
// batch, and come back as the buckets' new totals.

// Flush sends the increments of every capture Written before the call to
// the store and returns once they are stored, or with the store's error
// (they are then kept and sent again by the next flush). Without a store
// it does nothing.
func (t *Tracker) Flush(ctx context.Context) error {
	if t.store == nil {
		return nil
	}
	t.storeMu.Lock()
	defer t.storeMu.Unlock()

	t.dirtyMu.Lock()
	list := t.dirty
	t.dirty, t.flushing = nil, len(list)
	t.dirtyMu.Unlock()
	if len(list) == 0 {
		return nil
	}
	// Until they are stored (or back in dirty) they still count as
	// unflushed: a watcher that sees none waiting may read the store.
	defer func() {
		t.dirtyMu.Lock()
		t.flushing = 0
		t.dirtyMu.Unlock()
	}()
	deltas := make(map[string]Bucket, len(list))
	sent := make([]Bucket, len(list))
	for i, e := range list {
		e.mu.Lock()
		sent[i], e.ready, e.dirty = e.ready, Bucket{}, false
		e.mu.Unlock()
		deltas[e.name] = sent[i]
	}

	start := time.Now()
	totals, err := t.store.Add(ctx, deltas)
	t.m.flushDuration.Observe(time.Since(start).Seconds())
	t.m.flushes.Inc()
	t.flushes.Add(1)
	if err != nil {
		var requeue []*entry
		for i, e := range list {
			e.mu.Lock()
			e.ready.add(sent[i])
			if !e.dirty {
				e.dirty = true
				requeue = append(requeue, e)
			}
			e.mu.Unlock()
		}
		t.dirtyMu.Lock()
		t.dirty = append(t.dirty, requeue...)
		t.dirtyMu.Unlock()
		t.m.flushErrors.Inc()
		t.flushErrors.Add(1)
		err = fmt.Errorf("storing the counts of %d buckets: %w", len(list), err)
		// At Close the error is Close's: there is no retry to announce.
		if t.flushStreak.fail(err) && !t.closed.Load() {
			t.logger.Error("storing stats failed; keeping the counts in memory and retrying", "buckets", len(list), "err", err)
		}
		return err
	}
	now, tick := time.Now(), t.ticks.Load()
	for i, e := range list {
		e.mu.Lock()
		if v, ok := totals[e.name]; ok {
			e.base, e.loaded, e.loadedAt = v, true, now
		} else if e.loaded {
			e.base.add(sent[i])
		}
		e.local.sub(sent[i])
		e.lastUse = tick
		e.mu.Unlock()
	}
	if n := t.flushStreak.ok(); n > 0 {
		t.logger.Info("storing stats works again", "failed_flushes", n)
	}
	return nil
}

// unflushed counts the buckets whose Written increments are not stored
// yet, those of a flush in progress included.
func (t *Tracker) unflushed() int {
	t.dirtyMu.Lock()
	defer t.dirtyMu.Unlock()
	return len(t.dirty) + t.flushing
}
