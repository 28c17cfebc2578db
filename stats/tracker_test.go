package stats_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/stats"
)

type backend struct {
	name string
	open func(t *testing.T) func() (stats.Store, error) // nil: memory only
}

func persistentBackends() []backend {
	return []backend{{"embedded", embeddedBackend}, {"redis", redisBackend}}
}

func allBackends() []backend {
	return append([]backend{{"memory", nil}}, persistentBackends()...)
}

func mustOpen(t *testing.T, open func() (stats.Store, error)) stats.Store {
	t.Helper()
	if open == nil {
		return nil
	}
	s, err := open()
	require.NoError(t, err)
	return s
}

func newTracker(t *testing.T, s stats.Store, o stats.Options) *stats.Tracker {
	t.Helper()
	tr, err := stats.NewTracker(s, o, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	return tr
}

// stored reads buckets straight from the backend, through another Store.
func stored(t *testing.T, open func() (stats.Store, error), names ...string) map[string]stats.Bucket {
	t.Helper()
	s := mustOpen(t, open)
	defer s.Close()
	got, err := s.Get(context.Background(), names)
	require.NoError(t, err)
	return got
}

func get(t *testing.T, tr *stats.Tracker, name string) stats.Bucket {
	t.Helper()
	v, err := tr.Get(context.Background(), name)
	require.NoError(t, err)
	return v
}

func bk(tu, tb, nu, nb, ru, rb int64) stats.Bucket {
	return stats.Bucket{
		Total:   stats.Counts{URLs: tu, WireBytes: tb},
		New:     stats.Counts{URLs: nu, WireBytes: nb},
		Revisit: stats.Counts{URLs: ru, WireBytes: rb},
	}
}

// TestTrackerLimitsSeeTalliesBeforeFlush: a limit is reached by the
// capture that reaches it, not by a later flush.
func TestTrackerLimitsSeeTalliesBeforeFlush(t *testing.T) {
	for _, be := range allBackends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			var open func() (stats.Store, error)
			if be.open != nil {
				open = be.open(t)
			}
			tr := newTracker(t, mustOpen(t, open), stats.Options{FlushInterval: -1})
			m := parseMeta(t, `{"stats":{"buckets":[{"bucket":"job1","tally-domains":["example.com"]}]},`+
				`"limits":{"job1/total/urls":3},"soft-limits":{"job1:EXAMPLE.com/new/wire_bytes":250}}`)
			in := stats.Buckets("http://www.example.com/a", m)
			require.Equal(t, []string{"__all__", "job1", "job1:example.com"}, in)

			r, err := tr.CheckLimits(ctx, in, m)
			require.NoError(t, err)
			require.Nil(t, r)
			tr.Tally(in, stats.New, 100).Written()
			tr.Tally(in, stats.Revisit, 100).Written()
			r, err = tr.CheckLimits(ctx, in, m)
			require.NoError(t, err)
			require.Nil(t, r, "2 urls < 3, 100 new bytes < 250")

			tr.Tally(in, stats.New, 200) // tallied, not even written yet
			r, err = tr.CheckLimits(ctx, in, m)
			require.NoError(t, err)
			require.NotNil(t, r)
			require.False(t, r.Soft, "hard limits are checked first")
			require.Equal(t, "job1/total/urls", r.Key)
			require.Equal(t, "job1", r.Name)
			require.Equal(t, bk(3, 400, 2, 300, 1, 100), r.Value)

			soft := parseMeta(t, `{"stats":{"buckets":[{"bucket":"job1","tally-domains":["example.com"]}]},"soft-limits":{"job1:EXAMPLE.com/new/wire_bytes":250}}`)
			r, err = tr.CheckLimits(ctx, stats.Buckets("http://example.com/", soft), soft)
			require.NoError(t, err)
			require.NotNil(t, r)
			require.True(t, r.Soft)
			require.Equal(t, "job1:example.com/new/wire_bytes", r.Key, "the echoed key has the domain normalised")
			require.Equal(t, "job1:example.com", r.Name)
			require.Equal(t, int64(300), r.Value.New.WireBytes)

			r, err = tr.CheckLimits(ctx, stats.Buckets("http://example.org/", soft), soft)
			require.NoError(t, err)
			require.Nil(t, r, "a domain limit does not apply to other hosts")

			if open != nil {
				require.Empty(t, stored(t, open, "__all__", "job1", "job1:example.com"), "nothing was flushed")
			}
		})
	}
}

// TestTrackerFlushPersistsExactly: a flush stores the written captures,
// each once; pending and cancelled ones stay out.
func TestTrackerFlushPersistsExactly(t *testing.T) {
	for _, be := range persistentBackends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			open := be.open(t)
			tr := newTracker(t, mustOpen(t, open), stats.Options{FlushInterval: -1})
			in := []string{"__all__", "job1"}
			for range 3 {
				tr.Tally(in, stats.New, 100).Written()
			}
			for range 2 {
				tr.Tally(in, stats.Revisit, 10).Written()
			}
			tr.Tally(in, stats.NotWritten, 5).Written()
			pending := tr.Tally(in, stats.New, 1000)
			tr.Tally(in, stats.New, 7).Cancel()

			require.NoError(t, tr.Flush(ctx))
			want := bk(6, 325, 3, 300, 2, 20)
			require.Equal(t, map[string]stats.Bucket{"__all__": want, "job1": want}, stored(t, open, "__all__", "job1"))
			require.Equal(t, bk(7, 1325, 4, 1300, 2, 20), get(t, tr, "job1"), "Get adds what is tallied and not stored")

			require.NoError(t, tr.Flush(ctx))
			require.Equal(t, want, stored(t, open, "job1")["job1"], "a second flush adds nothing")

			pending.Written()
			pending.Cancel() // too late: it is on disk
			require.NoError(t, tr.Flush(ctx))
			want = bk(7, 1325, 4, 1300, 2, 20)
			require.Equal(t, want, stored(t, open, "job1")["job1"])
			require.Equal(t, want, get(t, tr, "job1"))
			require.NoError(t, tr.Close(ctx))

			tr2 := newTracker(t, mustOpen(t, open), stats.Options{FlushInterval: -1})
			require.Equal(t, want, get(t, tr2, "job1"), "a new tracker starts from the stored value")
			require.Equal(t, want, get(t, tr2, "__all__"))
		})
	}
}

// TestTrackersShareRedis: two proxies on one Redis add up.
func TestTrackersShareRedis(t *testing.T) {
	ctx := context.Background()
	open := redisBackend(t)
	o := stats.Options{FlushInterval: -1, RefreshInterval: time.Nanosecond}
	t1 := newTracker(t, mustOpen(t, open), o)
	t2 := newTracker(t, mustOpen(t, open), o)
	in := []string{"__all__", "job1"}
	// Both read the buckets first, so each has a cached value to refresh.
	require.Equal(t, stats.Bucket{}, get(t, t1, "job1"))
	require.Equal(t, stats.Bucket{}, get(t, t2, "job1"))
	for range 5 {
		t1.Tally(in, stats.New, 10).Written()
		t2.Tally(in, stats.Revisit, 1).Written()
	}
	require.Equal(t, bk(5, 50, 5, 50, 0, 0), get(t, t1, "job1"))
	require.Equal(t, bk(5, 5, 0, 0, 5, 5), get(t, t2, "job1"))
	require.NoError(t, t1.Flush(ctx))
	require.NoError(t, t2.Flush(ctx))
	want := bk(10, 55, 5, 50, 5, 5)
	require.Equal(t, want, get(t, t1, "job1"), "after a refresh")
	require.Equal(t, want, get(t, t2, "job1"))
	require.Equal(t, want, get(t, t1, "__all__"))

	// A tracker that never refreshes keeps what it read.
	t3 := newTracker(t, mustOpen(t, open), stats.Options{FlushInterval: -1, RefreshInterval: -1})
	require.Equal(t, want, get(t, t3, "job1"))
	t1.Tally(in, stats.New, 10).Written()
	require.NoError(t, t1.Flush(ctx))
	require.Equal(t, want, get(t, t3, "job1"))
	require.Equal(t, bk(11, 65, 6, 60, 5, 5), get(t, t2, "job1"))
}

func TestTrackerCancel(t *testing.T) {
	for _, be := range allBackends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			var open func() (stats.Store, error)
			if be.open != nil {
				open = be.open(t)
			}
			tr := newTracker(t, mustOpen(t, open), stats.Options{FlushInterval: -1})
			in := []string{"__all__", "job1", "job1"}
			kept := tr.Tally(in, stats.New, 10)
			x := tr.Tally(in, stats.Revisit, 5)
			require.Equal(t, bk(2, 15, 1, 10, 1, 5), get(t, tr, "job1"), "a name given twice counts once")
			x.Cancel()
			x.Cancel()
			x.Written() // after Cancel: ignored
			require.Equal(t, bk(1, 10, 1, 10, 0, 0), get(t, tr, "job1"))
			kept.Written()
			require.NoError(t, tr.Flush(ctx))
			require.Equal(t, bk(1, 10, 1, 10, 0, 0), get(t, tr, "__all__"))
			if open != nil {
				require.Equal(t, bk(1, 10, 1, 10, 0, 0), stored(t, open, "job1")["job1"])
			}

			y := tr.Tally([]string{"only-cancelled"}, stats.New, 1)
			y.Cancel()
			require.NoError(t, tr.Flush(ctx))
			require.Equal(t, stats.Bucket{}, get(t, tr, "only-cancelled"))
			if open != nil {
				require.NotContains(t, stored(t, open, "only-cancelled"), "only-cancelled")
			}
		})
	}
}

var errDown = errors.New("store is down")

// flakyStore fails the next failAdds Adds and, while failGets is set, Gets.
type flakyStore struct {
	stats.Store
	shared   bool
	failAdds atomic.Int32
	failGets atomic.Bool
	adds     atomic.Int32 // successful
	added    chan struct{}
}

func (f *flakyStore) Add(ctx context.Context, d map[string]stats.Bucket) (map[string]stats.Bucket, error) {
	if f.failAdds.Add(-1) >= 0 {
		return nil, errDown
	}
	f.failAdds.Store(0)
	res, err := f.Store.Add(ctx, d)
	if err == nil {
		f.adds.Add(1)
		if f.added != nil {
			select {
			case f.added <- struct{}{}:
			default:
			}
		}
	}
	return res, err
}

func (f *flakyStore) Get(ctx context.Context, names []string) (map[string]stats.Bucket, error) {
	if f.failGets.Load() {
		return nil, errDown
	}
	return f.Store.Get(ctx, names)
}

func (f *flakyStore) Shared() bool { return f.shared }

// logRecords decodes JSON log lines.
func logRecords(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func metricValues(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				values[mf.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				values[mf.GetName()] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				values[mf.GetName()] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return values
}

// TestTrackerRetriesAfterStoreRecovers: while the store fails, counts stay
// in memory (and in Get); once it works they are stored exactly once. The
// failure is logged once per streak and counted.
func TestTrackerRetriesAfterStoreRecovers(t *testing.T) {
	ctx := context.Background()
	open := embeddedBackend(t)
	f := &flakyStore{Store: mustOpen(t, open)}
	var logs bytes.Buffer
	reg := prometheus.NewPedanticRegistry()
	logger := slog.New(slog.NewJSONHandler(&logs, nil)).With("component", "stats") // scoped by the caller, as internal/app does
	tr, err := stats.NewTracker(f, stats.Options{FlushInterval: -1}, logger, reg)
	require.NoError(t, err)
	defer tr.Close(ctx)

	in := []string{"__all__", "job1"}
	tr.Tally(in, stats.New, 100).Written()
	tr.Tally(in, stats.New, 100).Written()
	f.failAdds.Store(3)
	for range 3 {
		require.ErrorIs(t, tr.Flush(ctx), errDown)
	}
	require.Equal(t, bk(2, 200, 2, 200, 0, 0), get(t, tr, "job1"), "kept in memory")
	st := tr.Status()
	require.Equal(t, 3, st["flush_failing"])
	require.Contains(t, st["last_flush_error"], errDown.Error())
	require.Equal(t, 2, st["buckets_unflushed"])
	recs := logRecords(t, &logs)
	require.Len(t, recs, 1, "one log line per failure streak")
	require.Equal(t, "ERROR", recs[0]["level"])
	require.Contains(t, recs[0]["err"], errDown.Error())
	require.Equal(t, "stats", recs[0]["component"])
	require.Equal(t, 1, strings.Count(logs.String(), `"component"`), "the component is named once: %s", logs.String())

	tr.Tally(in, stats.Revisit, 1).Written()
	require.NoError(t, tr.Flush(ctx))
	want := bk(3, 201, 2, 200, 1, 1)
	require.Equal(t, map[string]stats.Bucket{"__all__": want, "job1": want}, stored(t, open, "__all__", "job1"), "each capture stored once")
	require.Equal(t, want, get(t, tr, "job1"))
	st = tr.Status()
	require.NotContains(t, st, "flush_failing")
	require.Equal(t, 0, st["buckets_unflushed"])
	recs = logRecords(t, &logs)
	require.Len(t, recs, 2)
	require.Equal(t, "INFO", recs[1]["level"])
	require.EqualValues(t, 3, recs[1]["failed_flushes"])

	values := metricValues(t, reg)
	require.Equal(t, 4.0, values["warcproxy_stats_flushes_total"])
	require.Equal(t, 3.0, values["warcproxy_stats_flush_errors_total"])
	require.Equal(t, 4.0, values["warcproxy_stats_flush_duration_seconds"])
	require.Equal(t, 2.0, values["warcproxy_stats_buckets_tracked"])
	require.Equal(t, 0.0, values["warcproxy_stats_buckets_unflushed"])
}

// TestTrackerBackgroundFlushRetries: the background flush keeps retrying
// until the store takes the counts.
func TestTrackerBackgroundFlushRetries(t *testing.T) {
	ctx := context.Background()
	open := embeddedBackend(t)
	f := &flakyStore{Store: mustOpen(t, open), added: make(chan struct{}, 1)}
	f.failAdds.Store(5)
	tr := newTracker(t, f, stats.Options{FlushInterval: time.Millisecond})
	tr.Tally([]string{"__all__"}, stats.New, 10).Written()
	select {
	case <-f.added:
	case <-time.After(time.Minute): // a hang guard, not a speed check
		t.Fatal("the background flush never stored the counts")
	}
	require.Equal(t, bk(1, 10, 1, 10, 0, 0), stored(t, open, "__all__")["__all__"])
	require.NoError(t, tr.Close(ctx))
	require.Equal(t, int32(1), f.adds.Load())
}

// TestTrackerReadFailure: a bucket never read cannot be answered while the
// store is down; a cached one is, when a refresh fails.
func TestTrackerReadFailure(t *testing.T) {
	ctx := context.Background()
	open := embeddedBackend(t)
	seed := mustOpen(t, open)
	_, err := seed.Add(ctx, map[string]stats.Bucket{"job1": bk(4, 40, 4, 40, 0, 0)})
	require.NoError(t, err)
	require.NoError(t, seed.Close())

	f := &flakyStore{Store: mustOpen(t, open), shared: true}
	reg := prometheus.NewPedanticRegistry()
	tr, err := stats.NewTracker(f, stats.Options{FlushInterval: -1, RefreshInterval: time.Nanosecond}, nil, reg)
	require.NoError(t, err)
	defer tr.Close(ctx)

	f.failGets.Store(true)
	_, err = tr.Get(ctx, "job1")
	require.ErrorIs(t, err, errDown)
	tr.Tally([]string{"job1"}, stats.New, 1)
	_, err = tr.Get(ctx, "job1")
	require.ErrorIs(t, err, errDown, "tallies alone do not make a value")
	r, err := tr.CheckLimits(ctx, []string{"job1"}, parseMeta(t, `{"limits":{"job1/total/urls":1}}`))
	require.ErrorIs(t, err, errDown)
	require.Nil(t, r)

	f.failGets.Store(false)
	require.Equal(t, bk(5, 41, 5, 41, 0, 0), get(t, tr, "job1"))
	f.failGets.Store(true)
	require.Equal(t, bk(5, 41, 5, 41, 0, 0), get(t, tr, "job1"), "refresh failed: cached value")
	require.Equal(t, 1, tr.Status()["read_failing"], "a new streak since the read that worked")
	require.Equal(t, 4.0, metricValues(t, reg)["warcproxy_stats_read_errors_total"])
}

func TestTrackerMemoryOnly(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	tr, err := stats.NewTracker(nil, stats.Options{}, nil, reg)
	require.NoError(t, err)
	require.Equal(t, stats.Bucket{}, get(t, tr, "job1"))
	tr.Tally([]string{"__all__", "job1"}, stats.New, 10).Written()
	tr.Tally([]string{"__all__", "job1"}, stats.Revisit, 5)
	tr.Tally([]string{"__all__", "job1"}, stats.New, 1).Cancel()
	require.NoError(t, tr.Flush(ctx))
	require.Equal(t, bk(2, 15, 1, 10, 1, 5), get(t, tr, "job1"))
	require.Equal(t, "memory", tr.Status()["backend"])
	values := metricValues(t, reg)
	require.Equal(t, 2.0, values["warcproxy_stats_buckets_tracked"])
	require.Equal(t, 0.0, values["warcproxy_stats_flushes_total"])
	require.NoError(t, tr.Close(ctx))
	_, err = tr.Get(ctx, "job1")
	require.ErrorIs(t, err, stats.ErrClosed)
}

// TestTrackerCloseFlushes: Close stores what was written and closes the
// store; the tracker refuses reads afterwards.
func TestTrackerCloseFlushes(t *testing.T) {
	ctx := context.Background()
	open := embeddedBackend(t)
	s := mustOpen(t, open)
	tr, err := stats.NewTracker(s, stats.Options{FlushInterval: time.Hour}, nil, nil)
	require.NoError(t, err)
	tr.Tally([]string{"__all__"}, stats.New, 10).Written()
	tr.Tally([]string{"__all__"}, stats.New, 10) // never written
	require.NoError(t, tr.Close(ctx))
	require.NoError(t, tr.Close(ctx), "a second Close is a no-op")
	_, err = tr.Get(ctx, "__all__")
	require.ErrorIs(t, err, stats.ErrClosed)
	_, err = s.Get(ctx, []string{"__all__"})
	require.ErrorIs(t, err, stats.ErrClosed, "the tracker closed its store")
	require.Equal(t, bk(1, 10, 1, 10, 0, 0), stored(t, open, "__all__")["__all__"])
}

// TestTrackerCloseWithStoreDown: counts that cannot be stored at Close
// are lost, and Close's error says so; nothing is logged about keeping
// them and retrying, since the process is going away.
func TestTrackerCloseWithStoreDown(t *testing.T) {
	ctx := context.Background()
	f := &flakyStore{Store: mustOpen(t, embeddedBackend(t))}
	var logs bytes.Buffer
	tr, err := stats.NewTracker(f, stats.Options{FlushInterval: time.Hour}, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	require.NoError(t, err)
	tr.Tally([]string{"__all__", "job1"}, stats.New, 10).Written()
	f.failAdds.Store(1)
	err = tr.Close(ctx)
	require.ErrorIs(t, err, errDown)
	require.ErrorContains(t, err, "counts since the last flush are lost: storing the counts of 2 buckets")
	require.NotContains(t, logs.String(), "retrying")
}

// TestTrackerConcurrent: many captures at once, with the background flush
// running, store exactly the written ones.
func TestTrackerConcurrent(t *testing.T) {
	for _, be := range persistentBackends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			open := be.open(t)
			tr, err := stats.NewTracker(mustOpen(t, open), stats.Options{FlushInterval: time.Millisecond, RefreshInterval: time.Millisecond}, nil, nil)
			require.NoError(t, err)
			m := parseMeta(t, `{"stats":{"buckets":[{"bucket":"job1","tally-domains":["example.com"]}]},"limits":{"job1/total/urls":1000000}}`)
			const workers, per = 8, 200
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						in := stats.Buckets("http://www.example.com/", m)
						if r, err := tr.CheckLimits(ctx, in, m); err != nil || r != nil {
							errs <- errors.Join(err, errors.New("limit reached early"))
							return
						}
						x := tr.Tally(in, stats.Outcome((w+i)%3), 10)
						if i%5 == 0 {
							x.Cancel()
						} else {
							x.Written()
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.NoError(t, tr.Close(ctx))

			got := stored(t, open, "__all__", "job1", "job1:example.com")
			require.Len(t, got, 3)
			n := int64(workers * per * 4 / 5)
			for name, v := range got {
				require.Equal(t, n, v.Total.URLs, name)
				require.Equal(t, 10*n, v.Total.WireBytes, name)
				require.Greater(t, v.New.URLs, int64(0), name)
				require.Greater(t, v.Revisit.URLs, int64(0), name)
				require.Less(t, v.New.URLs+v.Revisit.URLs, n, name)
			}
		})
	}
}

func TestTrackerMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	_, err := stats.NewTracker(nil, stats.Options{}, nil, reg)
	require.NoError(t, err)
	_, err = stats.NewTracker(nil, stats.Options{}, nil, reg)
	require.Error(t, err, "a second tracker on one registry is a wiring mistake")
}

// blockingStore holds every Add until release is closed, after telling
// entered.
type blockingStore struct {
	stats.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) Add(ctx context.Context, d map[string]stats.Bucket) (map[string]stats.Bucket, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.Add(ctx, d)
}

// TestTrackerUnflushedDuringFlush: /status buckets_unflushed (and the
// gauge) count the buckets of a flush still in progress, so that "0"
// means the counts are in the store. It said 0 as soon as a flush had
// taken them, which let a reader of the store (a test settling on it,
// a script waiting for it) find counts missing while a slow flush, say
// one waiting for a frozen Redis, was still under way.
func TestTrackerUnflushedDuringFlush(t *testing.T) {
	ctx := context.Background()
	open := embeddedBackend(t)
	b := &blockingStore{Store: mustOpen(t, open), entered: make(chan struct{}), release: make(chan struct{})}
	reg := prometheus.NewPedanticRegistry()
	tr, err := stats.NewTracker(b, stats.Options{FlushInterval: -1}, slog.New(slog.DiscardHandler), reg)
	require.NoError(t, err)
	tr.Tally([]string{"__all__", "job1"}, stats.New, 100).Written()
	done := make(chan error, 1)
	go func() { done <- tr.Flush(ctx) }()
	<-b.entered
	require.Equal(t, 2, tr.Status()["buckets_unflushed"], "while the flush is in progress")
	require.Equal(t, 2.0, metricValues(t, reg)["warcproxy_stats_buckets_unflushed"])
	close(b.release)
	require.NoError(t, <-done)
	require.Equal(t, 0, tr.Status()["buckets_unflushed"])
	require.NoError(t, tr.Close(ctx))
}
