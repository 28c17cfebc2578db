package dedup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scanCount is SCAN's COUNT hint: about as many keys per round trip.
const scanCount = 1000

// migrate implements migrator: SCAN over the old keys (on every master
// of a cluster), each batch read in one pipeline, written with HSETNX in a
// second, and the old keys deleted in a third once written; then the
// marker.
func (s *redisStore) migrate(ctx context.Context, progress func(MigrateStats)) (MigrateStats, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return MigrateStats{}, err
	}
	defer leave()
	mk, err := s.storedMarker(ctx)
	if err != nil {
		return MigrateStats{}, err
	}
	var st MigrateStats
	scan := func(ctx context.Context, c redis.Cmdable) error {
		match := globEscape(s.prefix+"dedup:") + "*|*"
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, match, scanCount).Result()
			if err != nil {
				return fmt.Errorf("scanning redis: %w", err)
			}
			if err := s.migrateKeys(ctx, c, keys, mk, &st); err != nil {
				return err
			}
			progress(st)
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		// Each master scans its own keys, one at a time, so that the
		// counts need no more than this lock.
		var mu sync.Mutex
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, node)
		})
	} else {
		err = scan(ctx, s.c)
	}
	if err != nil {
		return st, err
	}
	mk.Migrated = true
	if err := s.c.Set(ctx, s.markerKey(), mk.bytes(), 0).Err(); err != nil {
		return st, fmt.Errorf("marking the index migrated: %w", err)
	}
	s.mu.Lock()
	s.mk = mk
	s.mu.Unlock()
	return st, nil
}

// migrateKeys converts the old entries under keys (full key names). The
// writes go through the store's client (a cluster routes each to its
// slot); the reads through c, the node that holds them.
func (s *redisStore) migrateKeys(ctx context.Context, c redis.Cmdable, keys []string, mk marker, st *MigrateStats) error {
	if len(keys) == 0 {
		return nil
	}
	read := c.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		gets[i] = read.Get(ctx, k)
	}
	if err := execPipe(ctx, read, "reading from"); err != nil {
		return err
	}
	// URLs before entries, as Save writes them (see there).
	urls, write := s.c.Pipeline(), s.c.Pipeline()
	type pending struct {
		old  string
		cmd  *redis.BoolCmd
		keep bool // a pointer: the old entry stays
	}
	var written []pending
	for i, cmd := range gets {
		v, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			continue // deleted since the scan
		}
		if err != nil {
			return fmt.Errorf("reading from redis: %w", err)
		}
		st.Read++
		key, ok := parseStorageKey(strings.TrimPrefix(keys[i], s.prefix+"dedup:"))
		e, derr := decodeEntry(v)
		if !ok || derr != nil {
			st.Unreadable++
			continue
		}
		d, ok := decodeDigest(key.Digest)
		if !ok {
			st.Kept++
			continue
		}
		hkey, field := s.hashKey(d, key.Bucket, mk.ShardBits)
		packedV := packEntry(e, false)
		if len(packedV) > maxHashValue {
			written = append(written, pending{old: keys[i], cmd: write.HSetNX(ctx, hkey, field, pointerValue), keep: true})
			continue
		}
		written = append(written, pending{old: keys[i], cmd: write.HSetNX(ctx, hkey, field, packedV)})
		if !s.layout.NoURLTable {
			ukey, ufield := s.urlKey(urlHash(e.URL), mk.ShardBits)
			urls.HSetNX(ctx, ukey, ufield, e.URL)
		}
	}
	if len(written) == 0 {
		return nil
	}
	if urls.Len() > 0 {
		if _, err := urls.Exec(ctx); err != nil {
			return fmt.Errorf("writing to redis: %w", err)
		}
	}
	if _, err := write.Exec(ctx); err != nil {
		return fmt.Errorf("writing to redis: %w", err)
	}
	del := s.c.Pipeline()
	for _, p := range written {
		set, err := p.cmd.Result()
		if err != nil {
			return fmt.Errorf("writing to redis: %w", err)
		}
		switch {
		case p.keep:
			// Never deleted: the hash may point at it from an earlier
			// run (HSETNX then finds the pointer).
			st.Kept++
		case !set:
			st.Superseded++
			del.Del(ctx, p.old)
		default:
			st.Converted++
			del.Del(ctx, p.old)
		}
	}
	if _, err := del.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("deleting migrated keys from redis: %w", err)
	}
	return nil
}
