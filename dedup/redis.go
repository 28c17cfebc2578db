package dedup

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/warcproxy/warcproxy/internal/store"
)

// redisStore keeps each entry in its own Redis string, under
// spec.KeyPrefix + "dedup:" + digest + "|" + bucket, with warcprox's JSON
// as the value and no expiry. It uses single-key commands only (a batch is
// one pipeline of GETs or SETs, no MGET, no scripts), so the same keys
// work on a Redis Cluster, where go-redis splits a pipeline by node.
type redisStore struct {
	c       redis.UniversalClient
	prefix  string
	release func() error
	guard   store.Guard
}

var _ Store = (*redisStore)(nil)

// Redis makes the Redis store of spec on c, shared with stats; Close
// calls release.
func (backends) Redis(c redis.UniversalClient, release func() error, spec store.Spec) (Store, error) {
	return &redisStore{c: c, prefix: spec.KeyPrefix + "dedup:", release: release}, nil
}

func (s *redisStore) key(k Key) string { return s.prefix + storageKey(k) }

// Lookup implements Store: the batch is one pipeline of GETs. A stored
// value that does not parse counts as not found.
func (s *redisStore) Lookup(ctx context.Context, keys []Key) ([]*Entry, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	out := make([]*Entry, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, s.key(k))
	}
	// Exec reports the first failed command, which may just be a missing
	// key (redis.Nil): look at each command too. A connection that could
	// not be set up (a wrong password, a database number the server does
	// not have) fails Exec and leaves every command without an error.
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading from redis: %w", err)
	}
	for i, cmd := range cmds {
		v, err := cmd.Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("reading from redis: %w", err)
		default:
			if e, err := decodeEntry(v); err == nil {
				out[i] = &e
			}
		}
	}
	return out, nil
}

// Save implements Store: the batch is one pipeline of SETs, sent in order,
// so the last item for a key wins.
func (s *redisStore) Save(ctx context.Context, items []Item) error {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return err
	}
	defer leave()
	if len(items) == 0 {
		return nil
	}
	// The last item for a key wins: send each key once, with its last
	// entry.
	keys := make([]string, len(items))
	last := make(map[string]int, len(items))
	for i, it := range items {
		keys[i] = s.key(it.Key)
		last[keys[i]] = i
	}
	pipe := s.c.Pipeline()
	for i, it := range items {
		if last[keys[i]] == i {
			pipe.Set(ctx, keys[i], encodeEntry(it.Entry), 0)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dedup save: %w", err)
	}
	return nil
}

// Close implements Store: it releases the shared client (closed with its
// last user).
func (s *redisStore) Close() error {
	return s.guard.Close(s.release)
}
