package stats

import (
	"context"
	"fmt"
	"time"
)

// Loading: a bucket's value is read from the store the first time it is
// asked for, and again when a shared store's copy may have changed.

// Get returns the current value of a bucket: stored plus tallied here. It
// reads the store only the first time a bucket is asked for and, for a
// shared store, when the cached value is older than RefreshInterval. When
// a re-read fails, the cached value is returned (and the next re-read
// waits another RefreshInterval); when the first read fails, the error.
func (t *Tracker) Get(ctx context.Context, bucket string) (Bucket, error) {
	if t.closed.Load() {
		return Bucket{}, ErrClosed
	}
	if !validName(bucket) {
		return Bucket{}, nil // never tallied
	}
	if v, ok := t.cached(bucket); ok {
		return v, nil
	}
	return t.load(ctx, bucket)
}

// cached returns the value of a bucket if it is known and fresh.
func (t *Tracker) cached(name string) (Bucket, bool) {
	sh := t.shard(name)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	e := sh.m[name]
	if e == nil {
		return Bucket{}, t.store == nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastUse = t.ticks.Load()
	if !e.loaded || t.refresh > 0 && time.Since(e.loadedAt) >= t.refresh {
		return Bucket{}, false
	}
	return e.base.Add(e.local), true
}

type loadResult struct {
	v   Bucket
	err error
}

// load reads a bucket from the store, one read per bucket at a time.
func (t *Tracker) load(ctx context.Context, name string) (Bucket, error) {
	t.life.Lock()
	if t.closed.Load() {
		t.life.Unlock()
		return Bucket{}, ErrClosed
	}
	t.wg.Add(1)
	t.life.Unlock()
	ch := make(chan loadResult, 1)
	go func() {
		defer t.wg.Done()
		v, err, _ := t.loads.Do(name, func() (any, error) { b, err := t.loadOne(name); return b, err })
		if err != nil {
			ch <- loadResult{err: err}
			return
		}
		ch <- loadResult{v: v.(Bucket)}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return Bucket{}, r.err
		}
		// Tallies may have come in since the read: add them.
		if v, ok := t.peek(name); ok {
			return v, nil
		}
		return r.v, nil
	case <-ctx.Done():
		return Bucket{}, ctx.Err()
	}
}

// peek returns the value of a loaded bucket, fresh or not.
func (t *Tracker) peek(name string) (Bucket, bool) {
	sh := t.shard(name)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	e := sh.m[name]
	if e == nil {
		return Bucket{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.base.Add(e.local), e.loaded
}

func (t *Tracker) loadOne(name string) (Bucket, error) {
	t.storeMu.RLock()
	defer t.storeMu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.StoreTimeout)
	defer cancel()
	res, err := t.store.Get(ctx, []string{name})
	var v Bucket
	stale := false
	t.update(name, func(e *entry) {
		e.lastUse = t.ticks.Load()
		if err != nil {
			if e.loaded {
				e.loadedAt, stale, v = time.Now(), true, e.base.Add(e.local)
			}
			return
		}
		e.base, e.loaded, e.loadedAt = res[name], true, time.Now()
		v = e.base.Add(e.local)
	})
	if err != nil {
		t.m.readErrors.Inc()
		if t.readStreak.fail(err) {
			t.logger.Warn("reading stats from the store failed; using cached values where there are any", "bucket", name, "err", err)
		}
		if stale {
			return v, nil
		}
		return Bucket{}, fmt.Errorf("stats: reading bucket %q: %w", name, err)
	}
	if n := t.readStreak.ok(); n > 0 {
		t.logger.Info("reading stats from the store works again", "failed_reads", n)
	}
	return v, nil
}
