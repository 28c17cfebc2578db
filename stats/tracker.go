package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/warcproxy/warcproxy/warcproxmeta"
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

// Tally counts a capture in buckets now: Get and limits see it at once.
// Call Written once the capture is on disk (only then may the increments
// be stored) or Cancel if it was dropped. Names repeated in buckets count
// once; invalid names (see MaxNameLen) are skipped.
func (t *Tracker) Tally(buckets []string, o Outcome, wireBytes int64) *Tally {
	x := &Tally{d: delta(o, wireBytes), entries: make([]*entry, 0, len(buckets))}
	if t.store != nil {
		x.t = t
	}
	var seen seenNames
	for _, name := range buckets {
		if !validName(name) || seen.seen(name) {
			continue
		}
		x.entries = append(x.entries, t.update(name, func(e *entry) { e.local.add(x.d) }))
	}
	return x
}

// Tally is one capture's increments, from Tracker.Tally.
type Tally struct {
	t       *Tracker // nil for a memory-only Tracker
	entries []*entry
	d       Bucket
	state   atomic.Int32
}

const (
	tallyPending int32 = iota
	tallyWritten
	tallyCancelled
)

// Written reports the capture on disk: its increments go to the store
// with the next flush. Only the first of Written and Cancel counts.
func (x *Tally) Written() {
	if x == nil || !x.state.CompareAndSwap(tallyPending, tallyWritten) || x.t == nil {
		return
	}
	var queue []*entry
	for _, e := range x.entries {
		e.mu.Lock()
		e.ready.add(x.d)
		if !e.dirty {
			e.dirty = true
			queue = append(queue, e)
		}
		e.mu.Unlock()
	}
	if len(queue) > 0 {
		x.t.dirtyMu.Lock()
		x.t.dirty = append(x.t.dirty, queue...)
		x.t.dirtyMu.Unlock()
	}
}

// Cancel takes the capture's increments back out (it was not archived
// after all). Only the first of Written and Cancel counts.
func (x *Tally) Cancel() {
	if x == nil || !x.state.CompareAndSwap(tallyPending, tallyCancelled) {
		return
	}
	for _, e := range x.entries {
		e.mu.Lock()
		e.local.sub(x.d)
		e.mu.Unlock()
	}
}

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

// unflushed counts the buckets whose Written increments are not stored
// yet, those of a flush in progress included.
func (t *Tracker) unflushed() int {
	t.dirtyMu.Lock()
	defer t.dirtyMu.Unlock()
	return len(t.dirty) + t.flushing
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

// Reached is a limit that a request would exceed.
type Reached struct {
	Limit warcproxmeta.Limit
	Soft  bool   // from "soft-limits" (answer 430) rather than "limits" (420)
	Key   string // the limit's key, domain normalised, to echo in "reached-limit" / "reached-soft-limit"
	Name  string // the bucket, domain normalised, to echo under "stats"
	Value Bucket // the bucket's current value
}

// CheckLimits checks the limits and then the soft limits of m, in order,
// as warcprox does before it connects upstream: a limit applies when its
// bucket is one of buckets (from Buckets for the request) and is reached
// when its value is positive and the counter is at least that value. It
// returns the first limit reached, or nil. An error means a bucket could
// not be read; the caller decides whether to let the request through.
func (t *Tracker) CheckLimits(ctx context.Context, buckets []string, m *warcproxmeta.Meta) (*Reached, error) {
	if m == nil {
		return nil, nil
	}
	var counted map[string]struct{} // for many buckets and limits (see linearSetMax)
	if len(buckets) > linearSetMax && len(m.Limits)+len(m.SoftLimits) > 1 {
		counted = make(map[string]struct{}, len(buckets))
		for _, b := range buckets {
			counted[b] = struct{}{}
		}
	}
	for _, set := range []struct {
		limits []warcproxmeta.Limit
		soft   bool
	}{{m.Limits, false}, {m.SoftLimits, true}} {
		for _, l := range set.limits {
			if l.Value <= 0 {
				continue
			}
			name, key := LimitBucket(l)
			if counted == nil {
				if !slices.Contains(buckets, name) {
					continue
				}
			} else if _, ok := counted[name]; !ok {
				continue
			}
			v, err := t.Get(ctx, name)
			if err != nil {
				return nil, err
			}
			if n, ok := v.Value(l.Category, l.Stat); ok && n >= l.Value {
				return &Reached{Limit: l, Soft: set.soft, Key: key, Name: name, Value: v}, nil
			}
		}
	}
	return nil, nil
}

// streak tracks a run of failures, so that each run is logged once.
type streak struct {
	mu   sync.Mutex
	n    int
	last error
}

// fail records a failure and reports whether it starts a streak.
func (s *streak) fail(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.last = err
	return s.n == 1
}

// ok ends a streak and returns how many failures it had.
func (s *streak) ok() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n, s.last = 0, nil
	return n
}

func (s *streak) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.last
}
