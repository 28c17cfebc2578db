package stats

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestEvict: idle buckets holding nothing unstored leave memory and come
// back from the store with the same value; others stay.
func TestEvict(t *testing.T) {
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "w.db"), 0o600, nil)
	require.NoError(t, err)
	tr, err := NewTracker(newBoltStore(db, db.Close), Options{FlushInterval: -1}, nil, nil)
	require.NoError(t, err)
	defer tr.Close(ctx)

	tr.Tally([]string{"flushed"}, New, 10).Written()
	require.NoError(t, tr.Flush(ctx))
	_, err = tr.Get(ctx, "read")
	require.NoError(t, err)
	tr.Tally([]string{"pending"}, New, 1)
	tr.Tally([]string{"written"}, Revisit, 2).Written()
	require.Equal(t, int64(4), tr.nBuckets.Load())

	tr.evict(100, 200)
	require.Equal(t, int64(4), tr.nBuckets.Load(), "nothing idle long enough")
	tr.ticks.Store(50)
	_, err = tr.Get(ctx, "read") // used at tick 50
	require.NoError(t, err)
	tr.evict(201, 200)
	require.Equal(t, int64(3), tr.nBuckets.Load(), "only the idle, fully stored bucket goes")
	tr.evict(1000, 200)
	require.Equal(t, int64(2), tr.nBuckets.Load(), "pending and written stay")

	v, err := tr.Get(ctx, "flushed")
	require.NoError(t, err)
	require.Equal(t, Bucket{Total: Counts{1, 10}, New: Counts{1, 10}}, v, "read back from the store")
	v, err = tr.Get(ctx, "written")
	require.NoError(t, err)
	require.Equal(t, Bucket{Total: Counts{1, 2}, Revisit: Counts{1, 2}}, v)
	require.NoError(t, tr.Flush(ctx))
	require.Equal(t, 0, tr.unflushed())
}

// TestASCIIShortcut: for ASCII hosts, NormalizeHost's shortcut gives what
// IDNA would.
func TestASCIIShortcut(t *testing.T) {
	parts := []string{"a", "Z", "0", "-", "_", ".", "xn--", "xn--bcher-kva", "XN--BCHER-KVA", "xn--zz", "ex", "COM", "%", " ", "~", "..", "a-", "-a", "\x7f", "\x01", "[", ":", "1"}
	seed := uint64(1)
	for range 20000 {
		var b []byte
		seed = seed*6364136223846793005 + 1442695040888963407
		n := int(seed>>60) + 1
		for range n {
			seed = seed*6364136223846793005 + 1442695040888963407
			b = append(b, parts[int(seed>>33)%len(parts)]...)
		}
		h := string(b)
		if got, want := strings.ToLower(h), toASCII(h); got != want {
			t.Fatalf("%q: shortcut %q, IDNA %q", h, got, want)
		}
	}
}
