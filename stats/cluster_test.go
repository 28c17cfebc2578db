package stats_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/stats/statstest"
)

func randomPrefix(t *testing.T) string {
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return "test-" + hex.EncodeToString(b[:]) + ":"
}

// TestRedisClusterStore: the Redis backend works on Redis Cluster, where
// one batch touches keys of many slots.
func TestRedisClusterStore(t *testing.T) {
	addr := redistest.Cluster(t, 1)[0]
	statstest.Run(t, func(t *testing.T) func() (stats.Store, error) {
		spec, err := store.Parse("redis+cluster://" + addr + "?prefix=" + randomPrefix(t))
		require.NoError(t, err)
		require.NotNil(t, spec.Cluster)
		return func() (stats.Store, error) { return stats.Open(spec, &store.Handles{}) }
	})
}
