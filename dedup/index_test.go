package dedup_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

var errBoom = errors.New("boom")

// fakeStore is a MemStore with hooks that run before each call (to fail it
// or hold it up) and a record of the batch sizes it was asked.
type fakeStore struct {
	dedupstest.MemStore
	mu           sync.Mutex
	beforeLookup func(keys []dedup.Key) error
	beforeSave   func(items []dedup.Item) error
	lookupSizes  []int
	saveSizes    []int
}

func (f *fakeStore) Lookup(ctx context.Context, keys []dedup.Key) ([]*dedup.Entry, error) {
	f.mu.Lock()
	hook := f.beforeLookup
	f.lookupSizes = append(f.lookupSizes, len(keys))
	f.mu.Unlock()
	if hook != nil {
		if err := hook(keys); err != nil {
			return nil, err
		}
	}
	return f.MemStore.Lookup(ctx, keys)
}

func (f *fakeStore) Save(ctx context.Context, items []dedup.Item) error {
	f.mu.Lock()
	hook := f.beforeSave
	f.saveSizes = append(f.saveSizes, len(items))
	f.mu.Unlock()
	if hook != nil {
		if err := hook(items); err != nil {
			return err
		}
	}
	return f.MemStore.Save(ctx, items)
}

func (f *fakeStore) onLookup(fn func([]dedup.Key) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeLookup = fn
}

func (f *fakeStore) onSave(fn func([]dedup.Item) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeSave = fn
}

func (f *fakeStore) sizes() (lookups, saves []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.lookupSizes...), append([]int(nil), f.saveSizes...)
}

// put stores entries directly, bypassing the Index.
func (f *fakeStore) put(t *testing.T, digest, bucket string, e dedup.Entry) {
	t.Helper()
	require.NoError(t, f.MemStore.Save(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: digest, Bucket: bucket}, Entry: e}}))
}

// stored looks an entry up in the store directly, bypassing the Index.
func (f *fakeStore) stored(t *testing.T, digest, bucket string) *dedup.Entry {
	t.Helper()
	got, err := f.MemStore.Lookup(context.Background(), []dedup.Key{{Digest: digest, Bucket: bucket}})
	require.NoError(t, err)
	return got[0]
}

// logBuffer collects JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log records with the message msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

type harness struct {
	ix  *dedup.Index
	s   *fakeStore
	reg *prometheus.Registry
	log *logBuffer
}

func newHarness(t *testing.T, o dedup.Options) *harness {
	t.Helper()
	h := &harness{s: &fakeStore{}, reg: prometheus.NewPedanticRegistry(), log: &logBuffer{}}
	logger := slog.New(slog.NewJSONHandler(h.log, nil))
	ix, err := dedup.NewIndex(h.s, o, logger, h.reg)
	require.NoError(t, err)
	h.ix = ix
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // whatever a test left unsaved may be dropped
		_ = ix.Close(ctx)
	})
	return h
}

// metric returns a counter's or gauge's value, or a histogram's sample
// count, for the metric with the given name and (optional) label value.
func metric(t *testing.T, reg prometheus.Gatherer, name string, labelValue ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(labelValue) > 0 && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != labelValue[0]) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labelValue)
	return 0
}

// waitUntil polls cond; the test's own timeout is the only deadline.
func waitUntil(cond func() bool) {
	for !cond() {
		time.Sleep(100 * time.Microsecond)
	}
}

var (
	e0 = dedupstest.Entry(0)
	e1 = dedupstest.Entry(1)
	e2 = dedupstest.Entry(2)
	e3 = dedupstest.Entry(3)
	e9 = dedupstest.Entry(9)
)

// TestIndexFirstHitOrder: the buckets are tried in order and the first
// that has the digest wins, whether its entry is stored or still pending.
func TestIndexFirstHitOrder(t *testing.T) {
	const d = "sha1:DIGEST"
	for _, tt := range []struct {
		name       string
		pending    map[string]dedup.Entry // saved through the Index, not yet flushed
		buckets    []string
		want       *dedup.Entry
		wantBucket string
	}{
		{name: "first bucket misses, second hits", buckets: []string{"b1", "b2", "b3"}, want: &e2, wantBucket: "b2"},
		{name: "order is the caller's", buckets: []string{"b3", "b2"}, want: &e3, wantBucket: "b3"},
		{name: "no bucket has it", buckets: []string{"b1", "b4"}},
		{name: "no buckets: default bucket", buckets: nil, want: &e0, wantBucket: ""},
		{name: "pending in an earlier bucket wins", pending: map[string]dedup.Entry{"b1": e9}, buckets: []string{"b1", "b2"}, want: &e9, wantBucket: "b1"},
		{name: "stored in an earlier bucket wins over pending", pending: map[string]dedup.Entry{"b3": e9}, buckets: []string{"b1", "b2", "b3"}, want: &e2, wantBucket: "b2"},
		{name: "pending replaces stored", pending: map[string]dedup.Entry{"b2": e9}, buckets: []string{"b1", "b2"}, want: &e9, wantBucket: "b2"},
		{name: "pending only", pending: map[string]dedup.Entry{"b4": e9}, buckets: []string{"b1", "b4"}, want: &e9, wantBucket: "b4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, dedup.Options{FlushInterval: time.Hour})
			h.s.put(t, d, "", e0)
			h.s.put(t, d, "b2", e2)
			h.s.put(t, d, "b3", e3)
			for b, e := range tt.pending {
				h.ix.Save(d, []string{b}, e)
			}
			got, bucket, err := h.ix.Lookup(context.Background(), d, tt.buckets)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantBucket, bucket)
		})
	}
}

// TestIndexReadsPendingSaves: a Save is found by Lookup before it reaches
// the store, without asking the store, and after it reached it.
func TestIndexReadsPendingSaves(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Hour})
	h.ix.Save("sha1:A", []string{"x", "y"}, e1)
	h.ix.Save("sha1:B", nil, e2)

	got, bucket, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"x"})
	require.NoError(t, err)
	require.Equal(t, &e1, got)
	require.Equal(t, "x", bucket)
	got, _, err = h.ix.Lookup(context.Background(), "sha1:B", []string{""})
	require.NoError(t, err)
	require.Equal(t, &e2, got, "no buckets on Save: the default bucket")
	require.Zero(t, h.s.Len(), "not stored yet")
	lookups, _ := h.s.sizes()
	require.Empty(t, lookups, "a pending hit in the first bucket needs no store lookup")
	require.Equal(t, 3, h.ix.Status()["pending_saves"])

	require.NoError(t, h.ix.Flush(context.Background()))
	require.Equal(t, 3, h.s.Len())
	require.Equal(t, &e1, h.s.stored(t, "sha1:A", "y"))
	require.Equal(t, 0, h.ix.Status()["pending_saves"])
	got, bucket, err = h.ix.Lookup(context.Background(), "sha1:A", []string{"nope", "y"})
	require.NoError(t, err)
	require.Equal(t, &e1, got, "found in the store now")
	require.Equal(t, "y", bucket)
}

// TestIndexBatchesConcurrentLookups: 200 lookups at once are all answered
// correctly with a handful of store calls. The store holds up the first
// calls until the rest have queued, as a slow round trip would.
func TestIndexBatchesConcurrentLookups(t *testing.T) {
	const n = 200
	h := newHarness(t, dedup.Options{Lookupers: 2})
	for i := 0; i < n; i += 2 {
		h.s.put(t, dedupstest.Digest(i), "b", dedupstest.Entry(i))
	}
	gate := make(chan struct{})
	entered := make(chan struct{}, n)
	h.s.onLookup(func([]dedup.Key) error {
		entered <- struct{}{}
		<-gate
		return nil
	})

	type result struct {
		e   *dedup.Entry
		b   string
		err error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	lookup := func(i int) {
		wg.Go(func() {
			e, b, err := h.ix.Lookup(context.Background(), dedupstest.Digest(i), []string{"a", "b"})
			results[i] = result{e, b, err}
		})
	}
	lookup(0)
	<-entered
	lookup(1)
	<-entered
	// Both lookupers are busy: the other 198 lookups queue up.
	for i := 2; i < n; i++ {
		lookup(i)
	}
	waitUntil(func() bool { return metric(t, h.reg, "warcproxy_dedup_lookup_queue_length") == n-2 })
	close(gate)
	wg.Wait()

	for i, r := range results {
		require.NoError(t, r.err, i)
		if i%2 == 0 {
			require.Equal(t, new(dedupstest.Entry(i)), r.e, i)
			require.Equal(t, "b", r.b, i)
		} else {
			require.Nil(t, r.e, i)
		}
	}
	sizes, _ := h.s.sizes()
	require.LessOrEqual(t, len(sizes), 4, "2 held-up calls, then the queued 198 lookups in at most 2 batches: %v", sizes)
	total := 0
	for _, s := range sizes {
		require.LessOrEqual(t, s, dedup.DefaultMaxBatch)
		total += s
	}
	require.Equal(t, 2*n, total, "each lookup asked for its 2 keys once")
	require.Equal(t, float64(n/2), metric(t, h.reg, "warcproxy_dedup_lookups_total", "hit"))
	require.Equal(t, float64(n/2), metric(t, h.reg, "warcproxy_dedup_lookups_total", "miss"))
	require.Equal(t, float64(len(sizes)), metric(t, h.reg, "warcproxy_dedup_lookup_batch_duration_seconds"))
}

// TestIndexMaxBatch: a batch never holds more than MaxBatch keys.
func TestIndexMaxBatch(t *testing.T) {
	h := newHarness(t, dedup.Options{Lookupers: 1, MaxBatch: 5})
	gate := make(chan struct{})
	entered := make(chan struct{}, 100)
	h.s.onLookup(func([]dedup.Key) error {
		entered <- struct{}{}
		<-gate
		return nil
	})
	errs := make([]error, 20)
	var wg sync.WaitGroup
	lookup := func(i int) {
		wg.Go(func() {
			_, _, errs[i] = h.ix.Lookup(context.Background(), dedupstest.Digest(i), []string{"a", "b"})
		})
	}
	lookup(0)
	<-entered // the lookuper is busy: the other 19 queue up
	for i := 1; i < len(errs); i++ {
		lookup(i)
	}
	waitUntil(func() bool { return metric(t, h.reg, "warcproxy_dedup_lookup_queue_length") == 19 })
	close(gate)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	sizes, _ := h.s.sizes()
	require.Equal(t, []int{2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2}, sizes, "two keys per lookup, at most 5 per batch")
}

// TestIndexSlowLookupDoesNotStallOthers: while one store call hangs,
// other lookups are served by the other lookupers.
func TestIndexSlowLookupDoesNotStallOthers(t *testing.T) {
	h := newHarness(t, dedup.Options{Lookupers: 2})
	h.s.put(t, "sha1:FAST", "", e1)
	gate := make(chan struct{})
	slowEntered := make(chan struct{})
	h.s.onLookup(func(keys []dedup.Key) error {
		if keys[0].Digest == "sha1:SLOW" {
			close(slowEntered)
			<-gate
		}
		return nil
	})
	slowDone := make(chan error)
	go func() {
		_, _, err := h.ix.Lookup(context.Background(), "sha1:SLOW", nil)
		slowDone <- err
	}()
	<-slowEntered
	got, _, err := h.ix.Lookup(context.Background(), "sha1:FAST", nil)
	require.NoError(t, err)
	require.Equal(t, &e1, got)
	close(gate)
	require.NoError(t, <-slowDone)
}

// TestIndexLookupTimeout: a store that hangs holds a lookup (and so the
// client whose capture waits for it) for LookupTimeout at most; the
// capture is then written in full.
func TestIndexLookupTimeout(t *testing.T) {
	h := newHarness(t, dedup.Options{LookupTimeout: 50 * time.Millisecond})
	release := make(chan struct{})
	h.s.onLookup(func([]dedup.Key) error { <-release; return nil })
	defer close(release)
	start := time.Now()
	_, _, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"a"})
	require.ErrorIs(t, err, dedup.ErrLookupTimeout)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, uint64(1), h.ix.Status()["lookup_errors"])
}

// TestIndexCircuit: after three failed lookups in a row the store is not
// asked for a while (lookups fail at once, counted as skipped); after the
// cool-down one lookup probes it, and a store that answers again closes
// the circuit.
func TestIndexCircuit(t *testing.T) {
	h := newHarness(t, dedup.Options{})
	var asked atomic.Int64
	var failing atomic.Bool
	failing.Store(true)
	h.s.onLookup(func([]dedup.Key) error {
		asked.Add(1)
		if failing.Load() {
			return errBoom
		}
		return nil
	})
	for range 3 {
		_, _, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"a"})
		require.ErrorIs(t, err, errBoom)
	}
	require.Equal(t, "open", h.ix.Status()["store"])
	require.Equal(t, float64(1), metric(t, h.reg, "warcproxy_dedup_circuit_open"))
	_, _, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"a"})
	require.ErrorIs(t, err, dedup.ErrStoreUnavailable)
	require.Equal(t, int64(3), asked.Load(), "an open circuit asks nothing")
	require.Equal(t, uint64(1), h.ix.Status()["skipped_lookups"])
	require.Equal(t, float64(1), metric(t, h.reg, "warcproxy_dedup_lookups_total", "skipped"))

	failing.Store(false)
	require.Eventually(t, func() bool {
		_, _, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"a"})
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "the probe after the cool-down closes the circuit")
	require.Equal(t, "closed", h.ix.Status()["store"])
	require.Equal(t, float64(0), metric(t, h.reg, "warcproxy_dedup_circuit_open"))
}

// TestIndexLookupErrors: a store failure, a canceled context and a closed
// Index are errors for the caller (who then archives in full), counted.
func TestIndexLookupErrors(t *testing.T) {
	h := newHarness(t, dedup.Options{})
	h.s.onLookup(func([]dedup.Key) error { return errBoom })
	_, _, err := h.ix.Lookup(context.Background(), "sha1:A", []string{"a"})
	require.ErrorIs(t, err, errBoom)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = h.ix.Lookup(ctx, "sha1:A", []string{"a"})
	require.ErrorIs(t, err, context.Canceled)

	// Canceled while the store is busy with it: the caller returns.
	gate := make(chan struct{})
	entered := make(chan struct{})
	h.s.onLookup(func([]dedup.Key) error {
		close(entered)
		<-gate
		return nil
	})
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := h.ix.Lookup(ctx, "sha1:A", []string{"a"})
		done <- err
	}()
	<-entered
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	close(gate)

	require.Equal(t, float64(3), metric(t, h.reg, "warcproxy_dedup_lookups_total", "error"))
	require.Equal(t, uint64(3), h.ix.Status()["lookup_errors"])
	require.Equal(t, float64(0), metric(t, h.reg, "warcproxy_dedup_lookups_total", "miss"))
}

// TestIndexFlush: Flush returns once every earlier Save is stored, in
// batches of at most MaxBatch, even while saves keep coming.
func TestIndexFlush(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Hour, MaxBatch: 100})
	for i := range 1000 {
		h.ix.Save(dedupstest.Digest(i), []string{"a", "b"}, dedupstest.Entry(i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
				h.ix.Save(dedupstest.Digest(i), []string{"a"}, dedupstest.Entry(i))
			}
		}
	})
	require.NoError(t, h.ix.Flush(context.Background()))
	for i := range 1000 {
		require.Equal(t, new(dedupstest.Entry(i)), h.s.stored(t, dedupstest.Digest(i), "a"), i)
		require.Equal(t, new(dedupstest.Entry(i)), h.s.stored(t, dedupstest.Digest(i), "b"), i)
	}
	close(stop)
	wg.Wait()
	_, sizes := h.s.sizes()
	for _, s := range sizes {
		require.LessOrEqual(t, s, 100)
	}
	require.NoError(t, h.ix.Flush(context.Background()))
	require.Equal(t, 0, h.ix.Status()["pending_saves"])
	require.Equal(t, float64(h.s.Len()), metric(t, h.reg, "warcproxy_dedup_saves_total"))
}

// TestIndexFlushesOnItsOwn: without Flush, saves reach the store (every
// FlushInterval, or when a batch is full).
func TestIndexFlushesOnItsOwn(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    dedup.Options
		n    int
	}{
		{"interval", dedup.Options{FlushInterval: time.Millisecond}, 3},
		{"full batch", dedup.Options{FlushInterval: time.Hour, MaxBatch: 10}, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.o)
			for i := range tt.n {
				h.ix.Save(dedupstest.Digest(i), nil, dedupstest.Entry(i))
			}
			waitUntil(func() bool { return h.s.Len() == tt.n })
			waitUntil(func() bool { return h.ix.Status()["pending_saves"] == 0 })
		})
	}
}

// TestIndexRetriesAfterStoreRecovers: failed writes are retried until the
// store takes them, logged once per attempt (not per entry) and counted.
func TestIndexRetriesAfterStoreRecovers(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Millisecond})
	var mu sync.Mutex
	failures := 3
	h.s.onSave(func([]dedup.Item) error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errBoom
		}
		return nil
	})
	for i := range 10 {
		h.ix.Save(dedupstest.Digest(i), []string{"a"}, dedupstest.Entry(i))
	}
	require.NoError(t, h.ix.Flush(context.Background()))
	require.Equal(t, 10, h.s.Len())
	require.Equal(t, float64(3), metric(t, h.reg, "warcproxy_dedup_save_errors_total"))
	require.Equal(t, float64(10), metric(t, h.reg, "warcproxy_dedup_saves_total"))
	require.Equal(t, float64(0), metric(t, h.reg, "warcproxy_dedup_saves_dropped_total"))
	failed := h.log.lines(t, "dedup store write failed, retrying")
	require.Len(t, failed, 3)
	require.Equal(t, "boom", failed[0]["err"])
	require.Len(t, h.log.lines(t, "dedup store writes recovered"), 1)
}

// TestIndexFlushGivesUp: with a store that keeps failing, Flush returns
// when its context ends.
func TestIndexFlushGivesUp(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Millisecond})
	failed := make(chan struct{}, 1)
	h.s.onSave(func([]dedup.Item) error {
		select {
		case failed <- struct{}{}:
		default:
		}
		return errBoom
	})
	h.ix.Save("sha1:A", nil, e1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-failed
		cancel()
	}()
	require.ErrorIs(t, h.ix.Flush(ctx), context.Canceled)
	got, _, err := h.ix.Lookup(context.Background(), "sha1:A", nil)
	require.NoError(t, err)
	require.Equal(t, &e1, got, "still pending, still found")
}

// TestIndexDropsOldestWhenFull: with the store down, at most MaxPending
// saves wait; the oldest unsaved are dropped, counted and logged, and the
// rest are stored once the store is back.
func TestIndexDropsOldestWhenFull(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Millisecond, MaxPending: 10, MaxBatch: 5})
	var mu sync.Mutex
	down := true
	h.s.onSave(func([]dedup.Item) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return errBoom
		}
		return nil
	})
	for i := range 25 {
		h.ix.Save(dedupstest.Digest(i), nil, dedupstest.Entry(i))
	}
	require.Equal(t, float64(15), metric(t, h.reg, "warcproxy_dedup_saves_dropped_total"))
	require.Equal(t, float64(10), metric(t, h.reg, "warcproxy_dedup_pending_saves"))
	for i := 20; i < 25; i++ {
		got, _, err := h.ix.Lookup(context.Background(), dedupstest.Digest(i), nil)
		require.NoError(t, err)
		require.Equal(t, new(dedupstest.Entry(i)), got, "the newest saves are kept")
	}

	mu.Lock()
	down = false
	mu.Unlock()
	require.NoError(t, h.ix.Flush(context.Background()))
	require.Equal(t, 10, h.s.Len(), "25 saved, 15 dropped")
	for i := 20; i < 25; i++ {
		require.Equal(t, new(dedupstest.Entry(i)), h.s.stored(t, dedupstest.Digest(i), ""))
	}
	require.Equal(t, uint64(15), h.ix.Status()["dropped_saves"])

	require.NoError(t, h.ix.Close(context.Background()))
	logged := 0.0
	for _, l := range h.log.lines(t, "dedup save buffer full: dropped the oldest unsaved entries (their payloads will be archived again in full)") {
		logged += l["dropped"].(float64)
	}
	require.Equal(t, float64(15), logged, "every drop logged, in a few lines")
}

// TestIndexReplacesPending: saving a key again before it is flushed
// stores the later entry, once.
func TestIndexReplacesPending(t *testing.T) {
	h := newHarness(t, dedup.Options{FlushInterval: time.Hour})
	h.ix.Save("sha1:A", nil, e1)
	h.ix.Save("sha1:A", nil, e2)
	require.Equal(t, 1, h.ix.Status()["pending_saves"])
	require.NoError(t, h.ix.Flush(context.Background()))
	require.Equal(t, &e2, h.s.stored(t, "sha1:A", ""))
	_, sizes := h.s.sizes()
	require.Equal(t, []int{1}, sizes)
}

// TestIndexClose: Close stores what is pending, answers the lookup in
// progress, closes the store and leaves no goroutine behind; the Index
// refuses work afterwards.
func TestIndexClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &fakeStore{}
	s.put(t, "sha1:B", "", e2)
	ix, err := dedup.NewIndex(s, dedup.Options{FlushInterval: time.Hour}, nil, nil)
	require.NoError(t, err)
	ix.Save("sha1:A", []string{"a"}, e1)

	gate := make(chan struct{})
	entered := make(chan struct{})
	s.onLookup(func([]dedup.Key) error {
		close(entered)
		<-gate
		return nil
	})
	type res struct {
		e   *dedup.Entry
		err error
	}
	lookup := make(chan res)
	go func() {
		e, _, err := ix.Lookup(context.Background(), "sha1:B", nil)
		lookup <- res{e, err}
	}()
	<-entered
	closed := make(chan error)
	go func() { closed <- ix.Close(context.Background()) }()
	close(gate)
	r := <-lookup
	require.NoError(t, r.err, "a lookup in progress is answered")
	require.Equal(t, &e2, r.e)
	require.NoError(t, <-closed)

	require.True(t, s.Closed(), "the store is closed")
	s.Reopen()
	require.Equal(t, &e1, s.stored(t, "sha1:A", "a"), "pending saves stored")
	_, _, err = ix.Lookup(context.Background(), "sha1:A", []string{"a"})
	require.ErrorIs(t, err, dedup.ErrClosed)
	require.ErrorIs(t, ix.Flush(context.Background()), dedup.ErrClosed)
	ix.Save("sha1:C", nil, e3)
	require.Equal(t, uint64(1), ix.Status()["dropped_saves"], "a save after Close is dropped")
	require.NoError(t, ix.Close(context.Background()), "a second Close does nothing")
}

// TestIndexClosedAtOnceWhenIdle: Close with a context already ended (a
// forced shutdown) when every save is stored and no lookup waits loses
// nothing, so it reports nothing: the lookupers are not "waited for" in
// vain. Repeated, since which ended first was left to chance.
func TestIndexClosedAtOnceWhenIdle(t *testing.T) {
	for range 50 {
		s := &fakeStore{}
		ix, err := dedup.NewIndex(s, dedup.Options{}, nil, nil)
		require.NoError(t, err)
		ix.Save("sha1:A", nil, e1)
		require.NoError(t, ix.Flush(context.Background()))
		_, _, err = ix.Lookup(context.Background(), "sha1:A", nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, ix.Close(ctx))
		require.True(t, s.Closed())
	}
}

// TestIndexCloseStoreDown: Close with a store that keeps failing gives up
// when its context ends, reports the loss and still stops everything.
func TestIndexCloseStoreDown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := &fakeStore{}
	s.onSave(func([]dedup.Item) error { return errBoom })
	logs := &logBuffer{}
	ix, err := dedup.NewIndex(s, dedup.Options{FlushInterval: time.Millisecond}, slog.New(slog.NewJSONHandler(logs, nil)), nil)
	require.NoError(t, err)
	for i := range 7 {
		ix.Save(dedupstest.Digest(i), nil, dedupstest.Entry(i))
	}
	waitUntil(func() bool { return ix.Status()["save_errors"].(uint64) > 0 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = ix.Close(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "boom", "the store's error is reported")
	require.True(t, s.Closed())
	require.Equal(t, uint64(7), ix.Status()["dropped_saves"])
	lost := logs.lines(t, "dedup saves not stored at shutdown")
	require.Len(t, lost, 1)
	require.Equal(t, float64(7), lost[0]["dropped"])
}

// TestIndexMetrics: the metrics pass the pedantic registry's checks and
// the linter, and count what happened.
func TestIndexMetrics(t *testing.T) {
	h := newHarness(t, dedup.Options{})
	h.s.put(t, "sha1:A", "", e1)
	ctx := context.Background()
	for _, d := range []string{"sha1:A", "sha1:A", "sha1:B"} {
		_, _, err := h.ix.Lookup(ctx, d, nil)
		require.NoError(t, err)
	}
	h.ix.Save("sha1:B", []string{"x", "y"}, e2)
	require.NoError(t, h.ix.Flush(ctx))

	problems, err := testutil.GatherAndLint(h.reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	for _, tt := range []struct {
		name  string
		label string
		want  float64
	}{
		{"warcproxy_dedup_lookups_total", "hit", 2},
		{"warcproxy_dedup_lookups_total", "miss", 1},
		{"warcproxy_dedup_lookups_total", "error", 0},
		{"warcproxy_dedup_lookup_batch_duration_seconds", "", 3},
		{"warcproxy_dedup_lookup_batch_keys", "", 3},
		{"warcproxy_dedup_saves_total", "", 2},
		{"warcproxy_dedup_save_batch_duration_seconds", "", 1},
		{"warcproxy_dedup_save_errors_total", "", 0},
		{"warcproxy_dedup_saves_dropped_total", "", 0},
		{"warcproxy_dedup_pending_saves", "", 0},
		{"warcproxy_dedup_lookup_queue_length", "", 0},
	} {
		t.Run(fmt.Sprint(tt.name, "/", tt.label), func(t *testing.T) {
			var labels []string
			if tt.label != "" {
				labels = append(labels, tt.label)
			}
			require.Equal(t, tt.want, metric(t, h.reg, tt.name, labels...))
		})
	}
	require.Equal(t, map[string]any{
		"enabled": true, "store": "closed", "lookups": uint64(3), "hits": uint64(2), "misses": uint64(1), "lookup_errors": uint64(0),
		"skipped_lookups": uint64(0), "saves": uint64(2), "save_errors": uint64(0), "dropped_saves": uint64(0), "pending_saves": 0,
	}, h.ix.Status())

	_, err = dedup.NewIndex(&fakeStore{}, dedup.Options{}, nil, h.reg)
	require.Error(t, err, "a second Index on the same registry")
}

func TestNewIndexValidates(t *testing.T) {
	_, err := dedup.NewIndex(nil, dedup.Options{}, nil, nil)
	require.Error(t, err)
	for _, o := range []dedup.Options{{MaxBatch: -1}, {Lookupers: -1}, {FlushInterval: -1}, {MaxPending: -1}} {
		_, err := dedup.NewIndex(&fakeStore{}, o, nil, nil)
		require.Error(t, err, "%+v", o)
	}
}

// TestNilIndex: a nil *Index is dedup turned off.
func TestNilIndex(t *testing.T) {
	var ix *dedup.Index
	e, b, err := ix.Lookup(context.Background(), "sha1:A", nil)
	require.NoError(t, err)
	require.Nil(t, e)
	require.Empty(t, b)
	ix.Save("sha1:A", nil, e1)
	require.NoError(t, ix.Flush(context.Background()))
	require.NoError(t, ix.Close(context.Background()))
	require.Equal(t, false, ix.Status()["enabled"])
}

// TestIndexOverBackends: an Index over each real backend saves, survives
// a restart of the process's handles, and finds what it saved.
func TestIndexOverBackends(t *testing.T) {
	for _, tt := range []struct {
		name string
		spec func(t *testing.T) string
	}{
		{"embedded", func(t *testing.T) string { return "embedded:" + filepath.Join(t.TempDir(), "w.db") }},
		{"redis", func(t *testing.T) string { return redistest.URL(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := store.Parse(tt.spec(t))
			require.NoError(t, err)
			open := func() *dedup.Index {
				s, err := dedup.Open(spec, &store.Handles{})
				require.NoError(t, err)
				ix, err := dedup.NewIndex(s, dedup.Options{}, nil, prometheus.NewPedanticRegistry())
				require.NoError(t, err)
				return ix
			}
			ctx := context.Background()
			ix := open()
			ix.Save("sha1:A", []string{"", "crawl 1"}, e1)
			require.NoError(t, ix.Close(ctx))

			ix = open()
			defer ix.Close(ctx)
			got, b, err := ix.Lookup(ctx, "sha1:A", []string{"crawl 2", "crawl 1"})
			require.NoError(t, err)
			require.Equal(t, &e1, got)
			require.Equal(t, "crawl 1", b)
			got, _, err = ix.Lookup(ctx, "sha1:B", nil)
			require.NoError(t, err)
			require.Nil(t, got)
		})
	}
}
