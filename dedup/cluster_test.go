package dedup_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// TestRedisCluster runs the Redis store on a real three-node Redis
// Cluster: the contract suite, then a batch whose keys live on every node
// (saves, same-URL and cross-URL hits through the URL table), then a
// migration of old entries spread over the nodes.
func TestRedisCluster(t *testing.T) {
	addrs := redistest.Cluster(t, 3)
	base := "redis+cluster://" + strings.Join(addrs, ",") + "?prefix="
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
	}
	open := func(t *testing.T, prefix string) (store.Spec, dedup.Store) {
		spec, err := store.Parse(base + url.QueryEscape(prefix))
		require.NoError(t, err)
		require.NotNil(t, spec.Cluster)
		s, err := dedup.Open(spec, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return spec, s
	}
	// keysPerNode counts the keys under prefix that each node holds.
	keysPerNode := func(t *testing.T, pattern string) []int {
		n := make([]int, len(nodes))
		for i, c := range nodes {
			keys, err := c.Keys(context.Background(), pattern).Result()
			require.NoError(t, err)
			n[i] = len(keys)
		}
		return n
	}

	t.Run("Contract", func(t *testing.T) {
		dedupstest.Run(t, func(t *testing.T) func() (dedup.Store, error) {
			spec, err := store.Parse(base + url.QueryEscape("contract-"+t.Name()+":"))
			require.NoError(t, err)
			return func() (dedup.Store, error) { return dedup.Open(spec, &store.Handles{}) }
		})
	})

	t.Run("AcrossSlots", func(t *testing.T) {
		_, s := open(t, "slots:")
		ctx := context.Background()
		const n = 300
		items := make([]dedup.Item, n)
		for i := range items {
			items[i] = dedup.Item{Key: dedup.Key{Digest: dedupstest.Digest(i), Bucket: "b"}, Entry: dedupstest.Entry(i)}
		}
		require.NoError(t, s.Save(ctx, items))
		for i, k := range keysPerNode(t, "slots:dedup2:*") {
			require.Positive(t, k, "node %d holds some of the hashes", i)
		}
		for i, k := range keysPerNode(t, "slots:dedup2url:*") {
			require.Positive(t, k, "node %d holds some of the URL table", i)
		}

		keys := make([]dedup.Key, 2*n)
		for i := range n {
			keys[2*i] = dedup.Key{Digest: dedupstest.Digest(i), Bucket: "b", URL: dedupstest.Entry(i).URL}
			keys[2*i+1] = dedup.Key{Digest: dedupstest.Digest(i), Bucket: "b", URL: "http://elsewhere.example/" + strconv.Itoa(i)}
		}
		got, err := s.Lookup(ctx, keys)
		require.NoError(t, err)
		for i := range n {
			e := dedupstest.Entry(i)
			require.Equal(t, &e, got[2*i], "same URL, entry %d", i)
			require.Equal(t, &e, got[2*i+1], "another URL, entry %d: from the URL table", i)
		}
	})

	t.Run("Migrate", func(t *testing.T) {
		spec, s := open(t, "migrate:")
		ctx := context.Background()
		cc := redis.NewClusterClient(spec.Cluster)
		defer cc.Close()
		const n = 200
		keys := make([]dedup.Key, n)
		for i := range n {
			keys[i] = dedup.Key{Digest: dedupstest.Digest(i), Bucket: "old"}
			e := dedupstest.Entry(i)
			v := fmt.Sprintf(`{"id":%q,"url":%q,"date":%q}`, e.ID, e.URL, e.Date)
			require.NoError(t, cc.Set(ctx, "migrate:dedup:"+keys[i].Digest+"|old", v, 0).Err())
		}
		for i, k := range keysPerNode(t, "migrate:dedup:*") {
			require.Positive(t, k, "node %d holds some old entries", i)
		}
		st, err := dedup.Migrate(ctx, s, nil)
		require.NoError(t, err)
		require.Equal(t, dedup.MigrateStats{Read: n, Converted: n}, st)
		require.Equal(t, []int{0, 0, 0}, keysPerNode(t, "migrate:dedup:*|*"), "no old entry left on any node")
		got, err := s.Lookup(ctx, keys)
		require.NoError(t, err)
		for i, g := range got {
			e := dedupstest.Entry(i)
			require.Equal(t, &e, g)
		}
	})
}
