package dedup

import (
	"context"
	"fmt"
)

// Save implements Store: the batch is one pipeline of HSETs (and, with
// the URL table, an HSETNX per URL), after the marker is made sure of.
// The last item for a key wins: each key is sent once, with its last
// entry.
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
	pipe := s.c.Pipeline()
	for i, it := range items {
		if last[it.Key.name()] != i {
			continue
		}
		d, ok := decodeDigest(it.Key.Digest)
		if !ok {
			pipe.Set(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			continue
		}
		key, field := s.hashKey(d, it.Key.Bucket, mk.ShardBits)
		v := packEntry(it.Entry, false)
		if len(v) > maxHashValue {
			// Too big for a listpack: the entry in full in the old
			// layout (URL included), a pointer to it in the hash.
			pipe.Set(ctx, s.oldKey(it.Key), encodeEntry(it.Entry), 0)
			pipe.HSet(ctx, key, field, pointerValue)
			continue
		}
		pipe.HSet(ctx, key, field, v)
		if !s.layout.NoURLTable {
			ukey, ufield := s.urlKey(urlHash(it.Entry.URL), mk.ShardBits)
			pipe.HSetNX(ctx, ukey, ufield, it.Entry.URL)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dedup save: %w", err)
	}
	return nil
}
