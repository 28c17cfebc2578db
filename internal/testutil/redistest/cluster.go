package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slots is the number of hash slots of a Redis Cluster.
const slots = 16384

// Cluster starts a Redis Cluster of n masters of its own (redis-server
// --cluster-enabled yes), each holding an equal range of the 16384 slots,
// joined with CLUSTER MEET, and stopped at cleanup. It returns their
// host:port once every node says cluster_state:ok. With n > 1, keys of a
// batch live on different nodes, so the client-side rules of a cluster
// (one slot per command, pipelines split by node) are really exercised.
// Without redis-server the test is skipped (failed under CI=true).
func Cluster(tb testing.TB, n int) []string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("redis-server is not installed")
		}
		tb.Skip("redis-server is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	addrs := make([]string, n)
	clients := make([]*redis.Client, n)
	for i := range n {
		addrs[i] = startClusterNode(tb, bin)
		clients[i] = redis.NewClient(&redis.Options{Addr: addrs[i], MaxRetries: -1})
		defer clients[i].Close()
	}
	for i, c := range clients {
		waitFor(tb, ctx, addrs[i]+": no answer", func() bool { return c.Ping(ctx).Err() == nil })
		lo, hi := i*slots/n, (i+1)*slots/n-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			tb.Fatalf("%s: CLUSTER ADDSLOTSRANGE %d %d: %v", addrs[i], lo, hi, err)
		}
	}
	for _, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			tb.Fatalf("CLUSTER MEET %s: %v", a, err)
		}
	}
	for i, c := range clients {
		waitFor(tb, ctx, addrs[i]+": cluster_state never ok", func() bool {
			info := c.ClusterInfo(ctx).Val()
			return strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r")
		})
	}
	return addrs
}

// startClusterNode starts one cluster-enabled redis-server on a free port,
// killed at cleanup.
func startClusterNode(tb testing.TB, bin string) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir := tb.TempDir()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		tb.Log("redis cluster node stopped:", <-exited)
	})
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// waitFor polls ok every 10 ms until it holds, or fails the test when ctx
// ends.
func waitFor(tb testing.TB, ctx context.Context, what string, ok func() bool) {
	tb.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			tb.Fatalf("redis cluster: %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
