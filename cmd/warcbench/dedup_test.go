package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// redisServer returns the redis-server binary: the test is skipped
// without one, and fails without one under CI.
func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no redis-server (.ci/run installs it)")
		}
		t.Skip("no redis-server")
	}
	return bin
}

// runDedup runs warcbench dedup --json with args and returns its result.
func runDedup(t *testing.T, args ...string) *bench.DedupResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), append([]string{"dedup", "--json", "--settle", "100ms", "--dir", t.TempDir()}, args...), &stdout, &stderr)
	require.Equal(t, 0, code, "%s\n%s", stdout.String(), stderr.String())
	var res bench.DedupResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	return &res
}

// requireSanePoint checks what any measured size must show.
func requireSanePoint(t *testing.T, p bench.DedupPoint, entries int64, lookups int64) {
	t.Helper()
	require.True(t, p.Reached, "%+v", p)
	require.Equal(t, entries, p.Entries)
	require.Positive(t, p.BytesPerEntry)
	require.Positive(t, p.FillPerSec)
	require.Positive(t, p.SavePerSec)
	require.Positive(t, p.SaveBatches)
	require.GreaterOrEqual(t, p.SaveP99, p.SaveP50)
	require.Positive(t, p.SaveP50)
	require.Equal(t, lookups, p.Lookups)
	require.Positive(t, p.LookupBatches)
	require.LessOrEqual(t, p.LookupBatches, lookups)
	require.Positive(t, p.LookupsPerSec)
	require.GreaterOrEqual(t, p.LookupP99, p.LookupP50)
	require.Positive(t, p.HitsAsked, "half the keys are saved digests")
	require.Equal(t, p.HitsAsked, p.HitsFound, "every saved digest is found")
	require.Zero(t, p.FalseHits, "no new digest is found")
}

func TestDedupCommand(t *testing.T) {
	bin := redisServer(t)
	csvPath := filepath.Join(t.TempDir(), "dedup.csv")
	res := runDedup(t, "--sizes", "10k,20k", "--lookups", "3000", "--redis", bin, "--csv", csvPath)
	require.Len(t, res.Points, 4, "two sizes of two backends")
	require.InDelta(t, 100, res.URLMeanLen, 10, "URLs of about 100 characters")
	require.Empty(t, res.Stopped)
	for i, p := range res.Points {
		want := []string{bench.DedupRedis, bench.DedupEmbedded}[i/2]
		require.Equal(t, want, p.Backend)
		requireSanePoint(t, p, []int64{10_000, 20_000}[i%2], 3000)
		switch p.Backend {
		case bench.DedupRedis:
			require.Positive(t, p.UsedMemoryDelta)
			require.Positive(t, p.Keys)
			require.Positive(t, p.KeySample)
			require.Positive(t, p.KeyBytesPerEntry)
		case bench.DedupEmbedded:
			require.Positive(t, p.FileBytes)
		}
	}
	recs := readCSV(t, csvPath)
	require.Len(t, recs, 5, "a header and a row per point")
	require.Equal(t, "backend", recs[0][0])
	require.Equal(t, []string{"hits_asked", "target_entries", "reached"}, recs[0][len(recs[0])-3:])
	require.Equal(t, recs[1][13], recs[1][len(recs[1])-3], "hits found equal hits asked")
	require.Equal(t, []string{"redis", "10000"}, recs[1][:2])
	require.Equal(t, []string{"embedded", "20000"}, recs[4][:2])
}

func TestDedupCommandText(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), []string{"dedup", "--backends", "embedded", "--sizes", "2k", "--lookups", "500", "--dir", t.TempDir()}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out := stdout.String()
	require.Contains(t, out, "lookups: 500 keys per size, 50% hits (each at the URL it was saved with), batches of 1..64 keys, 4 in flight; Redis URL table on")
	lines := strings.Split(out, "\n")
	var row string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "embedded" {
			row = l
		}
	}
	require.NotEmpty(t, row, out)
	require.Equal(t, "2k", strings.Fields(row)[1])
	require.NotContains(t, stderr.String(), "\r", "no progress line on a pipe")
}

// TestDedupCommandMaxTime cuts a fill short: the size reached is reported
// and the run still succeeds.
func TestDedupCommandMaxTime(t *testing.T) {
	res := runDedup(t, "--backends", "embedded", "--sizes", "1k,1G", "--lookups", "200", "--max-time", "2s")
	require.Len(t, res.Points, 2)
	last := res.Points[1]
	require.False(t, last.Reached)
	require.Less(t, last.Entries, last.Target)
	require.Equal(t, last.HitsAsked, last.HitsFound, "what was saved before the stop is found")
	require.Len(t, res.Stopped, 1)
	require.Contains(t, res.Stopped[0], "--max-time stopped the fill")
}

// TestDedupCommandRedisURL fills a server the bench did not start and
// leaves no key of its own behind.
func TestDedupCommandRedisURL(t *testing.T) {
	u := redistest.URL(t)
	res := runDedup(t, "--backends", "redis", "--redis-url", u, "--sizes", "5k", "--lookups", "500")
	require.Len(t, res.Points, 1)
	requireSanePoint(t, res.Points[0], 5000, 500)
	o, err := redis.ParseURL(strings.Split(u, "?")[0])
	require.NoError(t, err)
	c := redis.NewClient(o)
	defer c.Close()
	keys, _, err := c.Scan(context.Background(), 0, "wb-*", 100000).Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the bench removes its keys")
}

func TestDedupBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--sizes", "lots"},
		{"--sizes", "0"},
		{"--sizes", "1.5"},
		{"--sizes", "20k,10k"},
		{"--sizes", "1M,"},
		{"--backends", "mongo"},
		{"--redis", "/nonexistent/redis-server"},
		{"--redis-url", "http://127.0.0.1:6379"},
		{"--redis-url", "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"},
		{"--hit-ratio", "2"},
		{"--lookups", "0"},
		{"--max-time", "0s"},
		{"--settle", "-1s"},
		{"stray"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), append([]string{"dedup"}, args...), &stdout, &stderr)
			require.Equal(t, 2, code, stderr.String())
			require.Contains(t, stderr.String(), "Run warcbench dedup --help for usage.")
			require.Empty(t, stdout.String())
		})
	}
}

// TestDedupCommandInterrupted: a signal stops the fill; the sizes measured
// before it are on stderr and the run fails, since the size it was
// filling to is neither reached nor cut by --max-time.
func TestDedupCommandInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout bytes.Buffer
	var stderr lockedBuffer
	done := make(chan int)
	go func() {
		done <- realMain(ctx, []string{"dedup", "--backends", "embedded", "--sizes", "1k,1G", "--lookups", "100", "--dir", t.TempDir()}, &stdout, &stderr)
	}()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "msg=measured") }, time.Minute, 10*time.Millisecond)
	cancel()
	code := <-done
	require.Equal(t, 1, code, stderr.String())
	require.Contains(t, stderr.String(), "context canceled")
	require.Regexp(t, `(?m)^\s+embedded\s+1k\s`, stderr.String(), "the size measured before the interrupt")
	require.Empty(t, stdout.String())
}

// lockedBuffer is a bytes.Buffer that a command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
