// Package statstest is the contract every stats.Store backend passes.
package statstest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/stats"
)

// Backend prepares an empty backend for one test and returns a function
// that opens a Store on it. Each Store it opens is another user of the
// same data, as another proxy would be where the backend allows that
// (Redis: another client). The suite closes the Stores it opens.
type Backend func(t *testing.T) (open func() (stats.Store, error))

// Run runs the contract suite against a backend.
func Run(t *testing.T, backend Backend) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, open func() stats.Store)
	}{
		{"AddReturnsTotals", testAddReturnsTotals},
		{"GetMissing", testGetMissing},
		{"ConcurrentAddsAddUp", testConcurrentAddsAddUp},
		{"SurvivesReopen", testSurvivesReopen},
		{"OddNames", testOddNames},
		{"ErrorAfterClose", testErrorAfterClose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			openStore := backend(t)
			var mu sync.Mutex
			var opened []stats.Store
			t.Cleanup(func() {
				for _, s := range opened {
					_ = s.Close()
				}
			})
			tc.f(t, func() stats.Store {
				t.Helper()
				s, err := openStore()
				require.NoError(t, err)
				require.NotNil(t, s)
				mu.Lock()
				opened = append(opened, s)
				mu.Unlock()
				return s
			})
		})
	}
}

// b builds a bucket value: total, new and revisit (urls, wire_bytes).
func b(tu, tb, nu, nb, ru, rb int64) stats.Bucket {
	return stats.Bucket{
		Total:   stats.Counts{URLs: tu, WireBytes: tb},
		New:     stats.Counts{URLs: nu, WireBytes: nb},
		Revisit: stats.Counts{URLs: ru, WireBytes: rb},
	}
}

func testAddReturnsTotals(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	s := open()

	got, err := s.Add(ctx, map[string]stats.Bucket{
		"__all__": b(2, 300, 1, 100, 1, 200),
		"job1":    b(1, 100, 1, 100, 0, 0),
	})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(map[string]stats.Bucket{
		"__all__": b(2, 300, 1, 100, 1, 200),
		"job1":    b(1, 100, 1, 100, 0, 0),
	}, got))

	got, err = s.Add(ctx, map[string]stats.Bucket{"job1": b(3, 30, 0, 0, 2, 20)})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(map[string]stats.Bucket{"job1": b(4, 130, 1, 100, 2, 20)}, got),
		"Add returns the new totals, not the increments")

	got, err = s.Get(ctx, []string{"job1", "__all__"})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(map[string]stats.Bucket{
		"__all__": b(2, 300, 1, 100, 1, 200),
		"job1":    b(4, 130, 1, 100, 2, 20),
	}, got))

	got, err = s.Add(ctx, map[string]stats.Bucket{})
	require.NoError(t, err)
	require.Empty(t, got)
}

func testGetMissing(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	s := open()
	got, err := s.Get(ctx, []string{"never-added"})
	require.NoError(t, err)
	require.NotContains(t, got, "never-added")

	_, err = s.Add(ctx, map[string]stats.Bucket{"present": b(1, 1, 1, 1, 0, 0)})
	require.NoError(t, err)
	got, err = s.Get(ctx, []string{"never-added", "present", "present:example.com"})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(map[string]stats.Bucket{"present": b(1, 1, 1, 1, 0, 0)}, got))

	got, err = s.Get(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

// testConcurrentAddsAddUp: two Stores (two proxies) adding to the same
// buckets at once lose nothing, and every Add sees a consistent bucket.
func testConcurrentAddsAddUp(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	stores := []stats.Store{open(), open()}
	const workers, adds = 4, 50 // per store
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		seenAll []int64
		errs    []error
	)
	for si, s := range stores {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range adds {
					// New and revisit alternate, so total = new + revisit
					// in any consistent state of a bucket.
					d := b(1, 10, 1, 10, 0, 0)
					if (si+w+i)%2 == 1 {
						d = b(1, 10, 0, 0, 1, 10)
					}
					got, err := s.Add(ctx, map[string]stats.Bucket{"__all__": d, "job": d, "job:example.com": d})
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					for name, v := range got {
						if v.Total.URLs != v.New.URLs+v.Revisit.URLs || v.Total.WireBytes != 10*v.Total.URLs {
							mu.Lock()
							errs = append(errs, fmt.Errorf("bucket %q: inconsistent totals %+v", name, v))
							mu.Unlock()
						}
					}
					mu.Lock()
					seenAll = append(seenAll, got["__all__"].Total.URLs)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	n := len(stores) * workers * adds
	// Each Add saw its own increment applied: the totals it returned are
	// 1..n, each exactly once.
	sort.Slice(seenAll, func(i, j int) bool { return seenAll[i] < seenAll[j] })
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, seenAll)

	for _, s := range stores {
		got, err := s.Get(ctx, []string{"__all__", "job", "job:example.com"})
		require.NoError(t, err)
		require.Len(t, got, 3)
		for name, v := range got {
			require.Equal(t, int64(n), v.Total.URLs, name)
			require.Equal(t, int64(10*n), v.Total.WireBytes, name)
			require.Equal(t, int64(n), v.New.URLs+v.Revisit.URLs, name)
		}
	}
}

func testSurvivesReopen(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	s := open()
	want := map[string]stats.Bucket{"__all__": b(3, 33, 2, 22, 1, 11), "job1": b(1, 5, 0, 0, 1, 5)}
	_, err := s.Add(ctx, want)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open()
	got, err := s.Get(ctx, []string{"__all__", "job1"})
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, got))
	got, err = s.Add(ctx, map[string]stats.Bucket{"job1": b(1, 5, 1, 5, 0, 0)})
	require.NoError(t, err)
	require.Equal(t, b(2, 10, 1, 5, 1, 5), got["job1"])
}

func testOddNames(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	s := open()
	names := []string{
		":", "a:b:c", "job1:xn--bcher-kva.example", "job1:[::1]",
		"/", "a/b/c", "job/total/urls",
		"bücher", "日本語", "emoji 🎉", "with space", "tab\there",
		`quote"back\slash`, "{hashtag}", "*", "stats:nested", "__all__",
	}
	want := map[string]stats.Bucket{}
	for i, name := range names {
		want[name] = b(int64(i+1), int64(100*i+1), int64(i+1), int64(100*i+1), 0, 0)
	}
	got, err := s.Add(ctx, want)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, got))

	got, err = s.Get(ctx, names)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, got), "each name is its own bucket")

	got, err = s.Get(ctx, []string{"a", "a:b", "job", "BÜCHER", "job1:bücher.example"})
	require.NoError(t, err)
	require.Empty(t, got, "no name matches another by prefix, case or encoding")
}

func testErrorAfterClose(t *testing.T, open func() stats.Store) {
	ctx := context.Background()
	s := open()
	_, err := s.Add(ctx, map[string]stats.Bucket{"job1": b(1, 1, 1, 1, 0, 0)})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Add(ctx, map[string]stats.Bucket{"job1": b(1, 1, 1, 1, 0, 0)})
	require.ErrorIs(t, err, stats.ErrClosed)
	_, err = s.Get(ctx, []string{"job1"})
	require.ErrorIs(t, err, stats.ErrClosed)
	require.NoError(t, s.Close(), "a second Close is a no-op")

	// The data is still there for the next user.
	got, err := open().Get(ctx, []string{"job1"})
	require.NoError(t, err)
	require.Equal(t, b(1, 1, 1, 1, 0, 0), got["job1"])
}
