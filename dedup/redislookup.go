package dedup

import (
	"context"
	"encoding/binary"

	"github.com/redis/go-redis/v9"
)

// A Redis lookup batch is one pipeline: an HGET per key in the compact
// layout (a GET for a digest that does not decode). A second pipeline, only
// when the first shows it is needed, reads the old layout for the misses
// of an index not yet migrated and for pointer values, and the URL table
// for hits of another URL than the one looked up.

// redisFollow is a read of the second pipeline for key i.
type redisFollow struct {
	i   int
	cmd *redis.StringCmd
	url bool // a URL table read (else an old-layout GET)
}

// Lookup implements Store. A stored value that does not parse counts as
// not found.
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
	mk, err := s.currentMarker(ctx)
	if err != nil {
		return nil, err
	}
	pipe := s.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	compact := make([]bool, len(keys))
	for i, k := range keys {
		if d, ok := decodeDigest(k.Digest); ok {
			key, field := s.hashKey(d, k.Bucket, mk.ShardBits)
			cmds[i], compact[i] = pipe.HGet(ctx, key, field), true
		} else {
			cmds[i] = pipe.Get(ctx, s.oldKey(k))
		}
	}
	if err := execPipe(ctx, pipe, "reading from"); err != nil {
		return nil, err
	}
	var follow []redisFollow
	pipe2 := s.c.Pipeline()
	for i, cmd := range cmds {
		v, err := bytesOf(cmd)
		if err != nil {
			return nil, err
		}
		k := keys[i]
		switch {
		case !compact[i]:
			out[i] = oldEntry(v)
		case v == nil:
			if !mk.Migrated {
				follow = append(follow, redisFollow{i: i, cmd: pipe2.Get(ctx, s.oldKey(k))})
			}
		default:
			p, err := unpackEntry(v)
			switch {
			case err != nil:
			case p.Pointer:
				follow = append(follow, redisFollow{i: i, cmd: pipe2.Get(ctx, s.oldKey(k))})
			case p.URLHash == urlHash(k.URL):
				e := entryOf(p)
				e.URL = k.URL
				out[i] = e
			case s.layout.NoURLTable:
				e := entryOf(p)
				e.URLUnknown = true
				out[i] = e
			default:
				out[i] = entryOf(p)
				key, field := s.urlKey(p.URLHash, mk.ShardBits)
				follow = append(follow, redisFollow{i: i, cmd: pipe2.HGet(ctx, key, field), url: true})
			}
		}
	}
	if len(follow) == 0 {
		return out, nil
	}
	if err := execPipe(ctx, pipe2, "reading from"); err != nil {
		return nil, err
	}
	for _, f := range follow {
		v, err := bytesOf(f.cmd)
		if err != nil {
			return nil, err
		}
		if !f.url {
			out[f.i] = oldEntry(v)
			continue
		}
		if v == nil {
			// Saved while the table was off: the URL is lost.
			out[f.i].URLUnknown = true
			continue
		}
		out[f.i].URL = string(v)
	}
	return out, nil
}

// oldEntry decodes an old-layout value; nil (missing) or garbage: nil.
func oldEntry(v []byte) *Entry {
	if v == nil {
		return nil
	}
	e, err := decodeEntry(v)
	if err != nil {
		return nil
	}
	return &e
}

// urlKey and field name a URL in the URL table: hashes
// PREFIX+"dedup2url:"+SHARD of the URL hash, field the 8-byte hash.
func (s *redisStore) urlKey(h uint64, bits int) (key, field string) {
	b := binary.BigEndian.AppendUint64(nil, h)
	return s.prefix + "dedup2url:" + shard(b, bits), string(b)
}
