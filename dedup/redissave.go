package dedup

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Save implements Store. With the URL table, a batch is two pipelines:
// first an HSETNX per URL (and the old-layout strings of entries too big
// for a hash), then an HSET per entry, so that a lookup never finds an
// entry whose URL or string is not written yet: a cluster runs a
// pipeline's commands on different nodes in parallel, and even one node
// may serve other clients between two commands of a pipeline. The last
// item for a key wins: each key is sent once, with its last entry.
func (s *redisStore) Save(ctx context.Context, items []Item) error {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return err
	}
	defer leave()
	if len(items) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mk, err := s.storedMarker(ctx)
	if err != nil {
		return fmt.Errorf("dedup save: %w", err)
	}
	last := make(map[Key]int, len(items))
	for i, it := range items {
		last[it.Key.name()] = i
	}
	first, entries := s.c.Pipeline(), s.c.Pipeline()
	for i, it := range items {
		if last[it.Key.name()] != i {
			continue
		}
		d, ok := decodeDigest(it.Key.Digest)
		if !ok {
			entries.Set(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			continue
		}
		key, field := s.hashKey(d, it.Key.Bucket, mk.ShardBits)
		v := packEntry(it.Entry, false)
		if len(v) > maxHashValue {
			// Too big for a listpack: the entry in full in the old
			// layout (URL included), a pointer to it in the hash.
			first.Set(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			entries.HSet(ctx, key, field, pointerValue)
			continue
		}
		if !s.layout.NoURLTable {
			ukey, ufield := s.urlKey(urlHash(it.Entry.URL), mk.ShardBits)
			first.HSetNX(ctx, ukey, ufield, it.Entry.URL)
		}
		entries.HSet(ctx, key, field, v)
	}
	for _, pipe := range []redis.Pipeliner{first, entries} {
		if pipe.Len() == 0 {
			continue
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("dedup save: %w", err)
		}
	}
	return nil
}
