package dedup

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxBatch      = 500
	DefaultLookupers     = 4
	DefaultFlushInterval = 100 * time.Millisecond
	DefaultMaxPending    = 100000
)

const (
	// maxBackoff caps the wait between retries of a failing store write.
	maxBackoff = 10 * time.Second
	// dropLogInterval spaces out the log lines about dropped saves.
	dropLogInterval = 10 * time.Second
)

// Options tune an Index; a zero field takes its default.
type Options struct {
	// MaxBatch caps the keys of one Store.Lookup and the items of one
	// Store.Save (default 500).
	MaxBatch int
	// Lookupers is how many lookup batches may be in flight at once, so
	// that one slow round trip does not hold up the others (default 4).
	Lookupers int
	// FlushInterval is how long a save may wait in the buffer before it
	// is written when fewer than MaxBatch are waiting (default 100 ms); it
	// is also the first wait before retrying a failed write.
	FlushInterval time.Duration
	// MaxPending caps the saves buffered and not yet stored (default
	// 100000). When it is reached the oldest unsaved entries are dropped:
	// a lost entry costs one later full record instead of a revisit.
	MaxPending int
	// LookupTimeout bounds how long a Lookup waits for the store (the
	// proxy's --store-timeout); 0: only the caller's context bounds it.
	// Past it the lookup fails with ErrLookupTimeout and the capture is
	// written in full.
	LookupTimeout time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxBatch < 0 || o.Lookupers < 0 || o.FlushInterval < 0 || o.MaxPending < 0 {
		return o, fmt.Errorf("dedup: negative option in %+v", o)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Lookupers == 0 {
		o.Lookupers = DefaultLookupers
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxPending == 0 {
		o.MaxPending = DefaultMaxPending
	}
	return o, nil
}

// defaultBuckets is what a Lookup or Save without buckets uses: warcprox's
// default bucket "".
var defaultBuckets = []string{""}

// Index is what the proxy uses in front of a Store: concurrent lookups are
// gathered into batches, saves are buffered and written behind in batches,
// and both are counted.
//
// Lookups need no timer to batch: each of Options.Lookupers goroutines
// takes whatever lookups are queued (up to MaxBatch keys) and serves them
// with one Store.Lookup, so batches grow exactly when the store is the
// bottleneck. Saves wait in a bounded buffer, visible to Lookup, until the
// next flush.
//
// A nil *Index is valid and does nothing: Lookup finds nothing, Save
// drops the entry (dedup off).
type Index struct {
	store     Store
	opts      Options
	saveBatch int
	log       *slog.Logger
	m         *metrics

	// runCtx is passed to every store call; cancelling it stops the
	// flusher and aborts calls in flight (forced shutdown).
	runCtx    context.Context
	cancelRun context.CancelFunc

	circuit       circuit // skips lookups while the store keeps failing
	lookups       chan *lookupReq
	stopLookups   chan struct{}
	lookupWG      sync.WaitGroup
	lookupersDone chan struct{}

	kick        chan struct{}
	flusherDone chan struct{}
	lastDropLog time.Time // flusher goroutine only (and Close after it)

	mu     sync.RWMutex
	closed bool
	seq    uint64 // of the last Save, per key
	// queue holds the *pendingSave not yet taken by the flusher, oldest
	// (lowest seq) first; inflight the batch being written. latest maps a
	// key to its newest pending save, in either, for Lookup.
	queue      list.List
	inflight   []*pendingSave
	latest     map[Key]*pendingSave
	progress   chan struct{} // closed and replaced when saves complete or drop
	lastErr    error         // the last failed store write, for Flush
	dropsToLog uint64

	st counters
}

type pendingSave struct {
	key   Key
	entry Entry
	seq   uint64
	elem  *list.Element // in Index.queue; nil once taken by the flusher
}

type counters struct {
	hits, misses, lookupErrors atomic.Uint64
	urlUnknown                 atomic.Uint64 // a hit of another URL, its URL not kept: a miss
	skipped                    atomic.Uint64 // lookups not asked: circuit open
	saves, saveErrors, dropped atomic.Uint64
}

// NewIndex starts an Index in front of s, which it owns from then on
// (Close closes it). logger is used as given (the caller scopes it, e.g.
// with component=dedup); logger and reg may be nil.
func NewIndex(s Store, o Options, logger *slog.Logger, reg prometheus.Registerer) (*Index, error) {
	if s == nil {
		return nil, errors.New("dedup: NewIndex needs a store")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ix := &Index{
		store:         s,
		opts:          o,
		saveBatch:     min(o.MaxBatch, o.MaxPending),
		log:           logger,
		lookups:       make(chan *lookupReq, 1024),
		stopLookups:   make(chan struct{}),
		lookupersDone: make(chan struct{}),
		kick:          make(chan struct{}, 1),
		flusherDone:   make(chan struct{}),
		latest:        make(map[Key]*pendingSave),
		progress:      make(chan struct{}),
	}
	ix.m = newMetrics(ix)
	if reg != nil {
		if err := reg.Register(ix.m); err != nil {
			return nil, fmt.Errorf("registering dedup metrics: %w", err)
		}
	}
	ix.runCtx, ix.cancelRun = context.WithCancel(context.Background())
	ix.lookupWG.Add(o.Lookupers)
	for range o.Lookupers {
		go ix.runLookuper()
	}
	go func() {
		ix.lookupWG.Wait()
		close(ix.lookupersDone)
	}()
	go ix.runFlusher()
	return ix, nil
}

// Save records e as the original of digest in each bucket (none means the
// default bucket ""), replacing what the buckets held for it. Call it once
// the record e describes is on disk. Save never waits for the store: the
// entries are buffered (and found by Lookup) until the next flush. If
// Options.MaxPending saves are already waiting, the oldest are dropped.
func (ix *Index) Save(digest string, buckets []string, e Entry) {
	if ix == nil {
		return
	}
	if len(buckets) == 0 {
		buckets = defaultBuckets
	}
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		ix.st.dropped.Add(uint64(len(buckets)))
		return
	}
	for _, b := range buckets {
		k := Key{Digest: digest, Bucket: b}
		ix.seq++
		if ps := ix.latest[k]; ps != nil && ps.elem != nil {
			// Still queued: replace it, and it is now the newest.
			ps.entry, ps.seq = e, ix.seq
			ix.queue.MoveToBack(ps.elem)
			continue
		}
		ps := &pendingSave{key: k, entry: e, seq: ix.seq}
		ps.elem = ix.queue.PushBack(ps)
		ix.latest[k] = ps
	}
	var dropped uint64
	for ix.queue.Len() > 0 && ix.queue.Len()+len(ix.inflight) > ix.opts.MaxPending {
		ps := ix.queue.Remove(ix.queue.Front()).(*pendingSave)
		ps.elem = nil
		if ix.latest[ps.key] == ps {
			delete(ix.latest, ps.key)
		}
		dropped++
	}
	if dropped > 0 {
		ix.dropsToLog += dropped
		ix.notifyLocked()
	}
	full := ix.queue.Len() >= ix.saveBatch
	ix.mu.Unlock()
	if dropped > 0 {
		ix.st.dropped.Add(dropped)
	}
	if full {
		ix.kickFlusher()
	}
}

func (ix *Index) kickFlusher() {
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// notifyLocked wakes the Flush calls waiting for progress.
func (ix *Index) notifyLocked() {
	close(ix.progress)
	ix.progress = make(chan struct{})
}

// oldestLocked is the seq of the oldest save not yet stored (nor dropped),
// or MaxUint64 if there is none. The in-flight batch was taken from the
// front of the queue, so it is older than anything still queued.
func (ix *Index) oldestLocked() uint64 {
	if len(ix.inflight) > 0 {
		return ix.inflight[0].seq
	}
	if f := ix.queue.Front(); f != nil {
		return f.Value.(*pendingSave).seq
	}
	return math.MaxUint64
}

// Flush returns once every Save made before the call is stored (or was
// dropped, or replaced by a later Save of its key), or with an error when
// ctx ends first (the store keeps failing). It writes what is buffered
// without waiting for the flush interval.
func (ix *Index) Flush(ctx context.Context) error {
	if ix == nil {
		return nil
	}
	ix.mu.RLock()
	closed := ix.closed
	ix.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return ix.flush(ctx)
}

func (ix *Index) flush(ctx context.Context) error {
	ix.mu.RLock()
	target := ix.seq
	ix.mu.RUnlock()
	ix.kickFlusher()
	for {
		ix.mu.RLock()
		done := ix.oldestLocked() > target
		progress, lastErr := ix.progress, ix.lastErr
		ix.mu.RUnlock()
		if done {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("flushing dedup saves: %w (last store error: %w)", context.Cause(ctx), lastErr)
			}
			return fmt.Errorf("flushing dedup saves: %w", context.Cause(ctx))
		}
	}
}

// runFlusher writes buffered saves every FlushInterval, or at once when a
// batch is full or Flush asks, until runCtx ends.
func (ix *Index) runFlusher() {
	defer close(ix.flusherDone)
	t := time.NewTicker(ix.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ix.runCtx.Done():
			return
		case <-t.C:
		case <-ix.kick:
		}
		for {
			batch := ix.take()
			if len(batch) == 0 {
				break
			}
			if !ix.write(batch) {
				return
			}
		}
		ix.logDrops(false)
	}
}

// take moves the oldest queued saves, up to a batch, in flight.
func (ix *Index) take() []*pendingSave {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := min(ix.queue.Len(), ix.saveBatch)
	if n == 0 {
		return nil
	}
	batch := make([]*pendingSave, n)
	for i := range batch {
		ps := ix.queue.Remove(ix.queue.Front()).(*pendingSave)
		ps.elem = nil // in flight: Save no longer changes it
		batch[i] = ps
	}
	ix.inflight = batch
	return batch
}

// write stores an in-flight batch, retrying with back-off until it
// succeeds (true) or runCtx ends (false; the batch stays in flight).
func (ix *Index) write(batch []*pendingSave) bool {
	items := make([]Item, len(batch))
	for i, ps := range batch {
		items[i] = Item{Key: ps.key, Entry: ps.entry}
	}
	backoff := ix.opts.FlushInterval
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := ix.store.Save(ix.runCtx, items)
		ix.m.saveSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			// Count and log before Flush can see the batch done.
			if attempt > 1 {
				ix.log.Info("dedup store writes recovered", "attempts", attempt)
			}
			ix.st.saves.Add(uint64(len(batch)))
			ix.mu.Lock()
			for _, ps := range batch {
				if ix.latest[ps.key] == ps {
					delete(ix.latest, ps.key)
				}
			}
			ix.inflight = nil
			ix.lastErr = nil
			ix.notifyLocked()
			ix.mu.Unlock()
			return true
		}
		if ix.runCtx.Err() != nil {
			return false
		}
		ix.mu.Lock()
		ix.lastErr = err
		ix.mu.Unlock()
		ix.st.saveErrors.Add(1)
		ix.log.Warn("dedup store write failed, retrying",
			"err", err, "entries", len(items), "attempt", attempt, "retry_in", backoff, "pending", ix.pending())
		ix.logDrops(false)
		select {
		case <-time.After(backoff):
		case <-ix.runCtx.Done():
			return false
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// logDrops logs the saves dropped since the last such line, at most once
// per dropLogInterval unless forced.
func (ix *Index) logDrops(force bool) {
	now := time.Now()
	if !force && now.Sub(ix.lastDropLog) < dropLogInterval {
		return
	}
	ix.mu.Lock()
	n := ix.dropsToLog
	ix.dropsToLog = 0
	ix.mu.Unlock()
	if n == 0 {
		return
	}
	ix.lastDropLog = now
	ix.log.Warn("dedup save buffer full: dropped the oldest unsaved entries (their payloads will be archived again in full)",
		"dropped", n, "max_pending", ix.opts.MaxPending)
}

func (ix *Index) pending() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.queue.Len() + len(ix.inflight)
}

// Close flushes buffered saves (waiting at most until ctx ends), answers
// the lookups in progress, stops the goroutines and closes the store.
// Saves it could not store are counted as dropped, logged and returned as
// the error. Lookups still waiting when ctx ends get an error, as any
// failed lookup does (their captures are archived in full): nothing
// stored is lost by them, so they are not Close's error. Lookup, Flush
// and Save fail (Save drops) after Close; a second Close does nothing.
func (ix *Index) Close(ctx context.Context) error {
	if ix == nil {
		return nil
	}
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return nil
	}
	ix.closed = true
	ix.mu.Unlock()

	err := ix.flush(ctx)
	close(ix.stopLookups)
	select {
	case <-ix.lookupersDone:
	case <-ctx.Done():
	}
	ix.cancelRun()
	<-ix.flusherDone
	<-ix.lookupersDone

	ix.mu.Lock()
	lost := ix.queue.Len() + len(ix.inflight)
	ix.queue.Init()
	ix.inflight = nil
	clear(ix.latest)
	ix.notifyLocked()
	ix.mu.Unlock()
	ix.logDrops(true)
	if lost > 0 {
		ix.st.dropped.Add(uint64(lost))
		ix.log.Error("dedup saves not stored at shutdown", "dropped", lost, "err", err)
		if err == nil {
			err = ErrClosed
		}
		err = fmt.Errorf("%d saves not stored (their payloads will be archived again in full): %w", lost, err)
	}
	return errors.Join(err, ix.store.Close())
}

// Status reports a few figures for the /status page.
func (ix *Index) Status() map[string]any {
	if ix == nil {
		return map[string]any{"enabled": false}
	}
	hits, misses, errs, skipped := ix.st.hits.Load(), ix.st.misses.Load(), ix.st.lookupErrors.Load(), ix.st.skipped.Load()
	unknown := ix.st.urlUnknown.Load()
	return map[string]any{
		"enabled":         true,
		"store":           ix.circuit.state(),
		"lookups":         hits + misses + unknown + errs + skipped,
		"hits":            hits,
		"misses":          misses + unknown,
		"lookup_errors":   errs,
		"skipped_lookups": skipped,
		"saves":           ix.st.saves.Load(),
		"save_errors":     ix.st.saveErrors.Load(),
		"dropped_saves":   ix.st.dropped.Load(),
		"pending_saves":   ix.pending(),
	}
}
