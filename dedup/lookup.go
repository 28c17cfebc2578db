package dedup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Lookups: callers queue their keys, lookuper goroutines batch them into
// one store round trip, each bounded by Options.LookupTimeout and skipped
// while the circuit is open.

// lookupReq is one caller's keys waiting for a lookuper, and the answer.
type lookupReq struct {
	ctx  context.Context
	keys []Key
	res  []*Entry
	err  error
	done chan struct{}
	gone atomic.Bool // the caller stopped waiting (LookupTimeout)
}

// ErrLookupTimeout is a lookup the store did not answer within
// Options.LookupTimeout.
var ErrLookupTimeout = errors.New("no answer from the dedup store within the lookup timeout")

// timers are reused across lookups: the timeout bounds every lookup on
// the request path, and a timer each would be garbage each.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// Lookup is LookupURI without the URL of the capture: every hit is then
// one of another URL (see LookupURI).
func (ix *Index) Lookup(ctx context.Context, digest string, buckets []string) (e *Entry, bucket string, err error) {
	return ix.LookupURI(ctx, digest, "", buckets)
}

// LookupURI finds the original of a payload captured at uri: it tries the
// buckets in order and returns the first entry found with its bucket, or a
// nil entry when none has it. No buckets means the default bucket "".
// Saves not yet written to the store are found too. An error (the store
// failed, ctx ended, the Index is closed) means "unknown": archive the
// capture in full.
//
// uri lets a compact store answer a hit of the same URL from the hash it
// keeps; a hit of another URL whose URL the store does not keep
// (Entry.URLUnknown) is no use for a revisit: it counts as a miss, with
// result "url_unknown".
func (ix *Index) LookupURI(ctx context.Context, digest, uri string, buckets []string) (e *Entry, bucket string, err error) {
	if ix == nil {
		return nil, "", nil
	}
	if len(buckets) == 0 {
		buckets = defaultBuckets
	}
	// A pending save in bucket i wins over the store only if no earlier
	// bucket has the digest: ask the store about the buckets before it.
	first := -1
	var pending Entry
	ix.mu.RLock()
	closed := ix.closed
	if !closed {
		for i, b := range buckets {
			if ps := ix.latest[Key{Digest: digest, Bucket: b}]; ps != nil {
				first, pending = i, ps.entry
				break
			}
		}
	}
	ix.mu.RUnlock()
	if closed {
		ix.st.lookupErrors.Add(1)
		return nil, "", ErrClosed
	}
	n := len(buckets)
	if first >= 0 {
		n = first
	}
	unknown := false
	if n > 0 {
		keys := make([]Key, n)
		for i := range keys {
			keys[i] = Key{Digest: digest, Bucket: buckets[i], URL: uri}
		}
		res, err := ix.lookupStore(ctx, keys)
		if errors.Is(err, ErrStoreUnavailable) {
			ix.st.skipped.Add(1)
			return nil, "", err
		}
		if err != nil {
			ix.st.lookupErrors.Add(1)
			return nil, "", err
		}
		for i, e := range res {
			if e != nil && e.URLUnknown {
				unknown = true
				continue
			}
			if e != nil {
				ix.st.hits.Add(1)
				return e, buckets[i], nil
			}
		}
	}
	if first >= 0 {
		ix.st.hits.Add(1)
		return &pending, buckets[first], nil
	}
	if unknown {
		ix.st.urlUnknown.Add(1)
	} else {
		ix.st.misses.Add(1)
	}
	return nil, "", nil
}

// lookupStore asks the store about keys, unless the circuit says it has
// been failing: then it answers ErrStoreUnavailable at once.
func (ix *Index) lookupStore(ctx context.Context, keys []Key) ([]*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dedup lookup: %w", err)
	}
	if !ix.circuit.allow() {
		return nil, ErrStoreUnavailable
	}
	res, err := ix.askLookuper(ctx, keys)
	if !errors.Is(err, ErrClosed) {
		// A lookup that ran out of time counts as a failure too: a hung
		// store fails no call, it just never answers.
		ix.circuit.result(err)
	}
	return res, err
}

// askLookuper queues keys for a lookuper and waits for the answer.
func (ix *Index) askLookuper(ctx context.Context, keys []Key) ([]*Entry, error) {
	r := &lookupReq{ctx: ctx, keys: keys, done: make(chan struct{})}
	var expired <-chan time.Time
	if d := ix.opts.LookupTimeout; d > 0 {
		t := timers.Get().(*time.Timer)
		t.Reset(d)
		defer func() { t.Stop(); timers.Put(t) }()
		expired = t.C
	}
	select {
	case ix.lookups <- r:
	case <-ctx.Done():
		return nil, fmt.Errorf("dedup lookup: %w", ctx.Err())
	case <-expired:
		return nil, fmt.Errorf("dedup lookup: %w", ErrLookupTimeout)
	case <-ix.lookupersDone:
		return nil, ErrClosed
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("dedup lookup: %w", ctx.Err())
	case <-expired:
		r.gone.Store(true) // not worth asking the store any more
		return nil, fmt.Errorf("dedup lookup: %w", ErrLookupTimeout)
	case <-ix.lookupersDone:
		select {
		case <-r.done:
		default:
			return nil, ErrClosed
		}
	}
	return r.res, r.err
}

// runLookuper serves queued lookups in batches until Close, then serves
// what is still queued and returns.
func (ix *Index) runLookuper() {
	defer ix.lookupWG.Done()
	var carry *lookupReq
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-ix.lookups:
			case <-ix.stopLookups:
				select {
				case first = <-ix.lookups:
				default:
					return
				}
			}
		}
		batch := []*lookupReq{first}
		n := len(first.keys)
	collect:
		for n < ix.opts.MaxBatch {
			select {
			case r := <-ix.lookups:
				if n+len(r.keys) > ix.opts.MaxBatch {
					carry = r
					break collect
				}
				batch = append(batch, r)
				n += len(r.keys)
			default:
				break collect
			}
		}
		ix.serve(batch, n)
	}
}

// serve answers a batch of lookups with one Store.Lookup.
func (ix *Index) serve(batch []*lookupReq, n int) {
	keys := make([]Key, 0, n)
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil || r.gone.Load() {
			// Its caller has gone: do not ask the store for it.
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
		keys = append(keys, r.keys...)
	}
	if len(live) == 0 {
		return
	}
	start := time.Now()
	res, err := ix.store.Lookup(ix.runCtx, keys)
	ix.m.lookupSeconds.Observe(time.Since(start).Seconds())
	ix.m.lookupKeys.Observe(float64(len(keys)))
	if err == nil && len(res) != len(keys) {
		err = fmt.Errorf("dedup store answered %d of %d keys", len(res), len(keys))
	}
	if err != nil {
		err = fmt.Errorf("dedup lookup: %w", err)
	}
	off := 0
	for _, r := range live {
		if err != nil {
			r.err = err
		} else {
			r.res = res[off : off+len(r.keys) : off+len(r.keys)]
		}
		off += len(r.keys)
		close(r.done)
	}
}
