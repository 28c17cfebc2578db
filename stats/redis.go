package stats

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/warcproxy/warcproxy/internal/store"
)

// redisStore keeps each bucket in a Redis hash, key prefix+"stats:"+name,
// fields "total:urls", "total:wire_bytes", "new:urls" and so on. Each
// command touches one key, so it works on Redis Cluster, and any number of
// proxies may share it: their increments add up.
type redisStore struct {
	c       redis.UniversalClient
	prefix  string
	release func() error

	guard store.Guard
}

var (
	_ Store       = (*redisStore)(nil)
	_ SharedStore = (*redisStore)(nil)
)

// Redis makes the Redis store of spec on c, shared with dedup; Close
// calls release.
func (backends) Redis(c redis.UniversalClient, release func() error, spec store.Spec) (Store, error) {
	return &redisStore{c: c, prefix: spec.KeyPrefix + "stats:", release: release}, nil
}

// Shared reports true: other proxies may add to the same buckets.
func (s *redisStore) Shared() bool { return true }

// key returns the Redis key of a bucket.
func (s *redisStore) key(name string) string { return s.prefix + name }

// addScript adds to the counters of one bucket (ARGV: field, increment,
// field, increment, ...) and returns their new values. A script runs
// atomically, so the values are one state of the bucket; it touches one
// key, so it runs on Redis Cluster.
const addScript = `local r = {}
for i = 1, #ARGV, 2 do
  r[#r + 1] = redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
return r`

// Add runs HINCRBY on each counter of each bucket, a bucket's six in one
// script call, all buckets in one pipeline (one round trip per node).
func (s *redisStore) Add(ctx context.Context, deltas map[string]Bucket) (map[string]Bucket, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	if len(deltas) == 0 {
		return map[string]Bucket{}, nil
	}
	names := make([]string, 0, len(deltas))
	cmds := make([]*redis.Cmd, 0, len(deltas))
	fields := fieldNames()
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for name, d := range deltas {
			args := make([]any, 0, 2*len(fields))
			for i, v := range d.fields() {
				args = append(args, fields[i], *v)
			}
			names = append(names, name)
			cmds = append(cmds, p.Eval(ctx, addScript, []string{s.key(name)}, args...))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("adding to stats in redis: %w", err)
	}
	out := make(map[string]Bucket, len(names))
	for i, name := range names {
		vals, err := cmds[i].Int64Slice()
		if err != nil || len(vals) != len(fields) {
			return nil, fmt.Errorf("adding to stats in redis: key %q: unexpected reply %v (%v)", s.key(name), cmds[i].Val(), err)
		}
		var b Bucket
		for j, f := range b.fields() {
			*f = vals[j]
		}
		out[name] = b
	}
	return out, nil
}

// Get reads the named buckets with one HGETALL each, in one round trip.
func (s *redisStore) Get(ctx context.Context, names []string) (map[string]Bucket, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := make(map[string]Bucket, len(names))
	if len(names) == 0 {
		return out, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range names {
			cmds[i] = p.HGetAll(ctx, s.key(name))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading stats from redis: %w", err)
	}
	fields := fieldNames()
	for i, name := range names {
		m := cmds[i].Val()
		if len(m) == 0 {
			continue
		}
		var b Bucket
		for j, f := range b.fields() {
			v, ok := m[fields[j]]
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("reading stats from redis: key %q field %q: %w", s.key(name), fields[j], err)
			}
			*f = n
		}
		out[name] = b
	}
	return out, nil
}

// Close releases the client (it stays open while dedup still uses it).
func (s *redisStore) Close() error {
	return s.guard.Close(s.release)
}
