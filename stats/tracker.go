package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// Defaults for Options.
const (
	DefaultFlushInterval   = 500 * time.Millisecond
	DefaultRefreshInterval = time.Second
	DefaultStoreTimeout    = 10 * time.Second
	DefaultEvictAfter      = 10 * time.Minute
)

// Options tune a Tracker; zero values mean the defaults.
type Options struct {
	// FlushInterval is how often written increments are sent to the
	// store (and a failed batch retried). Negative: only Flush and Close
	// send them.
	FlushInterval time.Duration
	// RefreshInterval is how old the cached value of a bucket of a shared
	// store (Redis) may get before Get reads it again, to see other
	// proxies' increments. Negative: never re-read. Stores only this
	// process writes to are read once per bucket.
	RefreshInterval time.Duration
	// StoreTimeout bounds each store call the Tracker makes on its own
	// (background flushes and reads).
	StoreTimeout time.Duration
	// EvictAfter drops a bucket from memory when it has not been read or
	// tallied for this long and holds nothing unstored; it is read from
	// the store again when needed. Negative: never. Needs the background
	// flush (FlushInterval >= 0) to run.
	EvictAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	if o.EvictAfter == 0 {
		o.EvictAfter = DefaultEvictAfter
	}
	return o
}

const numShards = 32

// Tracker holds the current value of every bucket in use: the value last
// read from (or returned by) the store plus the increments tallied here
// and not yet stored. Tallies count at once, so limits hold exactly; the
// increments of captures that are on disk are sent to the store in one
// batch every FlushInterval. Safe for concurrent use.
type Tracker struct {
	store   Store // nil: memory only
	refresh time.Duration
	opts    Options
	logger  *slog.Logger
	m       *metrics

	shards   [numShards]shard
	nBuckets atomic.Int64
	ticks    atomic.Int64 // background loop iterations: the clock of eviction

	dirtyMu  sync.Mutex
	dirty    []*entry // entries with Written increments waiting for a flush
	flushing int      // entries taken from dirty by a Flush still storing them

	// storeMu is held exclusively around a flush (the store write and
	// applying its totals) and shared around a read and applying it, so
	// that a read never sees half of one of our own flushes.
	storeMu sync.RWMutex
	loads   singleflight.Group

	flushes, flushErrors atomic.Int64
	flushStreak          streak
	readStreak           streak

	life   sync.Mutex // orders wg.Add against Close
	closed atomic.Bool
	wg     sync.WaitGroup // reads in flight
	stop   chan struct{}
	done   chan struct{}
}

type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
}

// entry is one bucket. Lock order: shard.mu, then entry.mu.
type entry struct {
	name string

	mu       sync.Mutex
	base     Bucket // last value read from or returned by the store
	local    Bucket // tallied here and not yet stored: pending, written and in flight
	ready    Bucket // the Written part of local that no flush has taken yet
	loaded   bool   // base is known
	loadedAt time.Time
	lastUse  int64 // Tracker.ticks when last used
	dirty    bool  // in Tracker.dirty
}

// NewTracker returns a Tracker over s (nil: count in memory only, nothing
// survives a restart). The Tracker owns s: Close closes it. logger is used
// as given: the caller scopes it (component=stats); it may be nil.
func NewTracker(s Store, o Options, logger *slog.Logger, reg prometheus.Registerer) (*Tracker, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o = o.withDefaults()
	t := &Tracker{store: s, opts: o, logger: logger}
	if ss, ok := s.(SharedStore); ok && ss.Shared() && o.RefreshInterval > 0 {
		t.refresh = o.RefreshInterval
	}
	for i := range t.shards {
		t.shards[i].m = make(map[string]*entry)
	}
	m, err := newMetrics(t, reg)
	if err != nil {
		return nil, err
	}
	t.m = m
	if s != nil && o.FlushInterval > 0 {
		t.stop, t.done = make(chan struct{}), make(chan struct{})
		go t.run()
	}
	return t, nil
}

// run flushes every FlushInterval and evicts idle buckets now and then.
func (t *Tracker) run() {
	defer close(t.done)
	tick := time.NewTicker(t.opts.FlushInterval)
	defer tick.Stop()
	var idleTicks, sweepEvery int64
	if t.opts.EvictAfter > 0 {
		idleTicks = max(1, int64(t.opts.EvictAfter/t.opts.FlushInterval))
		sweepEvery = max(1, idleTicks/10)
	}
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		n := t.ticks.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), t.opts.StoreTimeout)
		_ = t.Flush(ctx) // logged (once per failure streak) and counted by flush
		cancel()
		if idleTicks > 0 && n%sweepEvery == 0 {
			t.evict(n, idleTicks)
		}
	}
}

func (t *Tracker) shard(name string) *shard {
	// FNV-1a
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h ^= uint32(name[i])
		h *= 16777619
	}
	return &t.shards[h%numShards]
}

// update runs f on the entry of name, creating it if needed, with the
// entry locked, and returns the entry.
func (t *Tracker) update(name string, f func(*entry)) *entry {
	sh := t.shard(name)
	sh.mu.RLock()
	if e := sh.m[name]; e != nil {
		e.mu.Lock()
		f(e)
		e.mu.Unlock()
		sh.mu.RUnlock()
		return e
	}
	sh.mu.RUnlock()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[name]
	if e == nil {
		e = &entry{name: name, loaded: t.store == nil, lastUse: t.ticks.Load()}
		sh.m[name] = e
		t.nBuckets.Add(1)
	}
	e.mu.Lock()
	f(e)
	e.mu.Unlock()
	return e
}

// evict drops idle buckets that hold nothing unstored.
func (t *Tracker) evict(now, idleTicks int64) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for name, e := range sh.m {
			e.mu.Lock()
			if !e.dirty && e.local.IsZero() && e.ready.IsZero() && now-e.lastUse > idleTicks {
				delete(sh.m, name)
				t.nBuckets.Add(-1)
			}
			e.mu.Unlock()
		}
		sh.mu.Unlock()
	}
}

// Close stops the background flush, stores what was Written (within ctx)
// and closes the store; counts it could not store are lost, and its error
// says so. Get fails afterwards; tallies still count in memory but are
// not stored.
func (t *Tracker) Close(ctx context.Context) error {
	t.life.Lock()
	if t.closed.Load() {
		t.life.Unlock()
		return nil
	}
	t.closed.Store(true)
	t.life.Unlock()
	if t.stop != nil {
		close(t.stop)
		<-t.done
	}
	t.wg.Wait()
	if t.store == nil {
		return nil
	}
	err := t.Flush(ctx)
	if err != nil {
		err = fmt.Errorf("counts since the last flush are lost: %w", err)
	}
	return errors.Join(err, t.store.Close())
}

// Status describes the Tracker for the /status page.
func (t *Tracker) Status() map[string]any {
	kind := "memory"
	if t.store != nil {
		kind = "store"
		if t.refresh > 0 {
			kind = "shared store"
		}
	}
	st := map[string]any{
		"backend":           kind,
		"buckets_tracked":   t.nBuckets.Load(),
		"buckets_unflushed": t.unflushed(),
		"flushes":           t.flushes.Load(),
		"flush_errors":      t.flushErrors.Load(),
	}
	if n, err := t.flushStreak.state(); n > 0 {
		st["flush_failing"] = n
		st["last_flush_error"] = err.Error()
	}
	if n, err := t.readStreak.state(); n > 0 {
		st["read_failing"] = n
		st["last_read_error"] = err.Error()
	}
	return st
}
