package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warcproxy/warcproxy/internal/store"
)

// redisKeySample is how many keys MEMORY USAGE is asked about at each size.
const redisKeySample = 200

// redisProbe reads, from outside the store, what the dedup entries cost a
// Redis server: used_memory, the number of keys under the bench's own key
// prefix, and MEMORY USAGE of a sample of them.
type redisProbe struct {
	c      *redis.Client
	prefix string // every key the store writes starts with it
}

// benchRedisURL returns the spec the store is opened with, and the key
// prefix in it. On the bench's own server that is the proxy's default
// prefix; on a server of the user's a prefix of the bench's own, so that
// its keys can be told from others and removed at the end, of the same
// length as the default so that a key costs what the proxy's does.
func benchRedisURL(u string, own bool) (spec, prefix string, err error) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", "", fmt.Errorf("parsing the redis url: %w", err)
	}
	prefix = store.DefaultKeyPrefix
	if !own {
		var r [3]byte
		_, _ = rand.Read(r[:])
		prefix = "wb-" + hex.EncodeToString(r[:]) + ":"
	}
	q := pu.Query()
	q.Set("prefix", prefix)
	pu.RawQuery = q.Encode()
	return pu.String(), prefix, nil
}

// newRedisProbe connects to the server of u (a redis:// URL without the
// prefix parameter).
func newRedisProbe(u, prefix string) (*redisProbe, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("parsing the redis url: %w", err)
	}
	q := pu.Query()
	q.Del("prefix")
	pu.RawQuery = q.Encode()
	o, err := redis.ParseURL(pu.String())
	if err != nil {
		return nil, fmt.Errorf("parsing the redis url: %w", err)
	}
	return &redisProbe{c: redis.NewClient(o), prefix: prefix}, nil
}

// usedMemory is INFO memory's used_memory.
func (p *redisProbe) usedMemory(ctx context.Context) (int64, error) {
	info, err := p.c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("redis info memory: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redis info memory: no used_memory in %q", info)
}

// dbSize is the number of keys in the database.
func (p *redisProbe) dbSize(ctx context.Context) (int64, error) {
	n, err := p.c.DBSize(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("redis dbsize: %w", err)
	}
	return n, nil
}

// sampleKeyBytes is the mean MEMORY USAGE (every element counted:
// SAMPLES 0) of up to redisKeySample keys under the prefix, as SCAN meets
// them (in hash table order, which is as good as random); 0 when there
// is none.
func (p *redisProbe) sampleKeyBytes(ctx context.Context) (float64, int, error) {
	var keys []string
	var cursor uint64
	for len(keys) < redisKeySample {
		ks, next, err := p.c.Scan(ctx, cursor, p.prefix+"*", 1000).Result()
		if err != nil {
			return 0, 0, fmt.Errorf("redis scan: %w", err)
		}
		keys = append(keys, ks...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	keys = keys[:min(len(keys), redisKeySample)]
	if len(keys) == 0 {
		return 0, 0, nil
	}
	pipe := p.c.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, k, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("redis memory usage: %w", err)
	}
	var sum int64
	for _, c := range cmds {
		sum += c.Val()
	}
	return float64(sum) / float64(len(keys)), len(keys), nil
}

// removeKeys deletes every key under the prefix (on a server the bench
// did not start), in batches of UNLINK.
func (p *redisProbe) removeKeys(ctx context.Context) error {
	var cursor uint64
	for {
		ks, next, err := p.c.Scan(ctx, cursor, p.prefix+"*", 5000).Result()
		if err != nil {
			return fmt.Errorf("redis scan: %w", err)
		}
		if len(ks) > 0 {
			if err := p.c.Unlink(ctx, ks...).Err(); err != nil {
				return fmt.Errorf("redis unlink: %w", err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// settle waits a moment after a fill, so that used_memory no longer holds
// the query buffers of the pipelines just sent.
func settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (p *redisProbe) close() error { return p.c.Close() }
