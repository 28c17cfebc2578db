package stats_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/stats/statstest"
)

// clusterNode starts a Redis Cluster of one node holding every slot, so
// that keys of different slots meet the client-side rules of a cluster
// (no multi-key command or transaction across slots). Returns host:port.
func clusterNode(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("redis-server is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	dir := t.TempDir()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--save", "", "--appendonly", "no", "--dir", dir)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		t.Log("redis cluster node stopped:", <-exited)
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	wait := func(what string, ok func() bool) {
		for !ok() {
			select {
			case err := <-exited:
				t.Fatalf("redis-server exited: %v", err)
			case <-ctx.Done():
				t.Fatalf("redis cluster node: %s", what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	wait("no answer", func() bool { return c.Ping(ctx).Err() == nil })
	require.NoError(t, c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	wait("cluster_state never ok", func() bool {
		return strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok")
	})
	return addr
}

func randomPrefix(t *testing.T) string {
	var b [6]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return "test-" + hex.EncodeToString(b[:]) + ":"
}

// TestRedisClusterStore: the Redis backend works on Redis Cluster, where
// one batch touches keys of many slots.
func TestRedisClusterStore(t *testing.T) {
	addr := clusterNode(t)
	statstest.Run(t, func(t *testing.T) func() (stats.Store, error) {
		spec, err := store.Parse("redis+cluster://" + addr + "?prefix=" + randomPrefix(t))
		require.NoError(t, err)
		require.NotNil(t, spec.Cluster)
		return func() (stats.Store, error) { return stats.Open(spec, &store.Handles{}) }
	})
}
