package dedup

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Add implements Store with HSETNX (SETNX for the old layout). Until the
// index is migrated, a first pipeline asks whether the old layout holds
// the keys (EXISTS). As in Save, URLs and the strings of oversized
// entries are written before the entries.
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
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mk, err := s.storedMarker(ctx)
	if err != nil {
		return nil, fmt.Errorf("dedup add: %w", err)
	}
	// The first item of each key, and whether the old layout has it.
	todo := make([]int, 0, len(items))
	seen := make(map[Key]bool, len(items))
	for i, it := range items {
		if k := it.Key.name(); !seen[k] {
			seen[k] = true
			todo = append(todo, i)
		}
	}
	oldTaken, err := s.oldExist(ctx, items, todo, mk)
	if err != nil {
		return nil, err
	}
	first, entries := s.c.Pipeline(), s.c.Pipeline()
	cmds := make(map[int]*redis.BoolCmd, len(todo))
	for _, i := range todo {
		it := items[i]
		d, ok := decodeDigest(it.Key.Digest)
		if !ok {
			cmds[i] = entries.SetNX(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			continue
		}
		if oldTaken[i] {
			continue
		}
		key, field := s.hashKey(d, it.Key.Bucket, mk.ShardBits)
		v := packEntry(it.Entry, false)
		if len(v) > maxHashValue {
			// SETNX: a string there belongs to an entry the hash has
			// (a pointer, or one that replaced it), so HSETNX fails too.
			first.SetNX(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			v = pointerValue
		} else if !s.layout.NoURLTable {
			ukey, ufield := s.urlKey(urlHash(it.Entry.URL), mk.ShardBits)
			first.HSetNX(ctx, ukey, ufield, it.Entry.URL)
		}
		cmds[i] = entries.HSetNX(ctx, key, field, v)
	}
	for _, pipe := range []redis.Pipeliner{first, entries} {
		if pipe.Len() == 0 {
			continue
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("dedup add: %w", err)
		}
	}
	for i, cmd := range cmds {
		added[i] = cmd.Val()
	}
	return added, nil
}

// oldExist reports which of the items at todo, with a digest that
// decodes, the old layout holds; none once the index is migrated.
func (s *redisStore) oldExist(ctx context.Context, items []Item, todo []int, mk marker) (map[int]bool, error) {
	if mk.Migrated {
		return nil, nil
	}
	pipe := s.c.Pipeline()
	cmds := make(map[int]*redis.IntCmd, len(todo))
	for _, i := range todo {
		if _, ok := decodeDigest(items[i].Key.Digest); ok {
			cmds[i] = pipe.Exists(ctx, s.oldKey(items[i].Key))
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("dedup add: reading from redis: %w", err)
	}
	taken := make(map[int]bool, len(cmds))
	for i, cmd := range cmds {
		n, err := cmd.Result()
		if err != nil {
			return nil, fmt.Errorf("dedup add: reading from redis: %w", err)
		}
		taken[i] = n > 0
	}
	return taken, nil
}
