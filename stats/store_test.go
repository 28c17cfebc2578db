package stats_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/stats/statstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// embeddedBackend is a fresh bbolt file; its Stores share one handle, as
// dedup and stats in one process do.
func embeddedBackend(t *testing.T) func() (stats.Store, error) {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	h := &store.Handles{}
	return func() (stats.Store, error) { return stats.Open(spec, h) }
}

// redisBackend is a fresh key prefix on a real Redis; each Store has its
// own client, as separate proxies would.
func redisBackend(t *testing.T) func() (stats.Store, error) {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	return func() (stats.Store, error) { return stats.Open(spec, &store.Handles{}) }
}

func TestEmbeddedStore(t *testing.T) { statstest.Run(t, embeddedBackend) }

func TestRedisStore(t *testing.T) { statstest.Run(t, redisBackend) }

// TestEmbeddedLayout: warcprox's JSON document under the bucket name in
// the "stats" bbolt bucket, next to other packages' buckets, untouched.
func TestEmbeddedLayout(t *testing.T) {
	ctx := context.Background()
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	var h store.Handles
	db, release, err := h.Bolt(spec) // dedup's handle on the same file
	require.NoError(t, err)
	defer func() { require.NoError(t, release()) }()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("dedup"))
		if err != nil {
			return err
		}
		return b.Put([]byte("job1"), []byte("dedup's"))
	}))

	s, err := stats.Open(spec, &h)
	require.NoError(t, err)
	_, err = s.Add(ctx, map[string]stats.Bucket{"job1:bücher.example": {
		Total: stats.Counts{URLs: 3, WireBytes: 300}, New: stats.Counts{URLs: 2, WireBytes: 200}, Revisit: stats.Counts{URLs: 1, WireBytes: 100},
	}})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		require.Equal(t, `{"bucket":"job1:b\u00fccher.example","total":{"urls":3,"wire_bytes":300},"new":{"urls":2,"wire_bytes":200},"revisit":{"urls":1,"wire_bytes":100}}`,
			string(tx.Bucket([]byte("stats")).Get([]byte("job1:bücher.example"))))
		require.Equal(t, "dedup's", string(tx.Bucket([]byte("dedup")).Get([]byte("job1"))))
		return nil
	}), "the shared file stays open for dedup after stats closes")
}

// TestRedisLayout: one hash per bucket under the spec's key prefix.
func TestRedisLayout(t *testing.T) {
	ctx := context.Background()
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	s, err := stats.Open(spec, &store.Handles{})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Add(ctx, map[string]stats.Bucket{"job1:example.com": {
		Total: stats.Counts{URLs: 3, WireBytes: 300}, New: stats.Counts{URLs: 2, WireBytes: 200}, Revisit: stats.Counts{URLs: 1, WireBytes: 100},
	}})
	require.NoError(t, err)

	c := redis.NewClient(spec.Redis)
	defer c.Close()
	got, err := c.HGetAll(ctx, spec.KeyPrefix+"stats:job1:example.com").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"total:urls": "3", "total:wire_bytes": "300",
		"new:urls": "2", "new:wire_bytes": "200",
		"revisit:urls": "1", "revisit:wire_bytes": "100",
	}, got)
	keys, err := c.Keys(ctx, spec.KeyPrefix+"*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{spec.KeyPrefix + "stats:job1:example.com"}, keys)
}
