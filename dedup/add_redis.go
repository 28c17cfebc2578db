package dedup

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Add implements Store: one pipeline of SETNX, sent in order, so the first
// item for a key is stored and the later ones find it. Each command
// touches one key, so this works on a Redis Cluster too.
func (s *redisStore) Add(ctx context.Context, items []Item) ([]bool, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return nil, err
	}
	defer leave()
	added := make([]bool, len(items))
	if len(items) == 0 {
		return added, nil
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.BoolCmd, len(items))
	for i, it := range items {
		cmds[i] = pipe.SetNX(ctx, s.key(it.Key), encodeEntry(it.Entry), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("dedup add: %w", err)
	}
	for i, cmd := range cmds {
		added[i] = cmd.Val()
	}
	return added, nil
}
