package dedup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/warcproxy/warcproxy/internal/store"
)

// redisStore keeps entries in the compact layout (layout 2): many entries
// per Redis hash, PREFIX+"dedup2:"+ALGO+":"+SHARD+":"+BUCKET, where SHARD
// is the digest's first ShardBits bits in hex, the field the digest's
// bytes after its first ShardBits/8 bytes, and the value packEntry
// without the full URL, short enough (at most 64 bytes) for the hash to
// stay listpack-encoded. Full URLs go to a URL table (redisurl.go).
//
// The old layout, one string per entry under PREFIX+"dedup:"+digest+"|"+
// bucket holding warcprox's JSON, is still read for the misses until the
// marker says the index is migrated, and still written for an entry whose
// digest does not decode, or whose packed value would pass 64 bytes (then
// with a pointer value in its hash, so that a migrated index finds it).
//
// Commands are single-key only (a batch is one pipeline, a second for the
// rare reads that the first shows are needed; no MGET, no scripts), so the
// same keys work on a Redis Cluster, where go-redis splits a pipeline by
// node; the shards spread the hashes over its slots (no hash tags).
type redisStore struct {
	c       redis.UniversalClient
	prefix  string // spec.KeyPrefix
	layout  Layout
	release func() error
	guard   store.Guard

	mu sync.Mutex
	// mk is the marker in force; stored says that it was read from (or
	// written to) the server, else it is this proxy's default, until the
	// first lookup or save reads it.
	mk     marker
	read   bool
	stored bool
}

var _ Store = (*redisStore)(nil)

// Redis makes the Redis store of spec on c, shared with stats; Close
// calls release.
func (b backends) Redis(c redis.UniversalClient, release func() error, spec store.Spec) (Store, error) {
	return &redisStore{
		c: c, prefix: spec.KeyPrefix, layout: b.layout, release: release,
		mk: marker{Layout: layoutCompact, ShardBits: b.layout.ShardBits},
	}, nil
}

func (s *redisStore) markerKey() string { return s.prefix + "dedup:layout" }

// oldKey is k's key in the old layout.
func (s *redisStore) oldKey(k Key) string { return s.prefix + "dedup:" + storageKey(k) }

// shard is the first bits of b (at least 4 bytes) in hex.
func shard(b []byte, bits int) string {
	v := binary.BigEndian.Uint32(b) >> (32 - bits)
	return fmt.Sprintf("%0*x", (bits+3)/4, v)
}

// hashKey and field name k's entry in the compact layout.
func (s *redisStore) hashKey(d binaryDigest, bucket string, bits int) (key, field string) {
	return s.prefix + "dedup2:" + d.name + ":" + shard(d.bytes, bits) + ":" + bucket, string(d.bytes[bits/8:])
}

// currentMarker returns the marker in force, reading it from the server
// the first time.
func (s *redisStore) currentMarker(ctx context.Context) (marker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.read {
		return s.mk, nil
	}
	v, err := s.c.Get(ctx, s.markerKey()).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return marker{}, fmt.Errorf("reading the dedup layout marker: %w", err)
	default:
		if err := s.adoptLocked(v); err != nil {
			return marker{}, err
		}
	}
	s.read = true
	return s.mk, nil
}

// adoptLocked makes the marker v the one in force.
func (s *redisStore) adoptLocked(v []byte) error {
	m, err := parseMarker(v)
	if err != nil {
		return err
	}
	if m.ShardBits == 0 {
		m.ShardBits = DefaultShardBits
	}
	if m.ShardBits != s.layout.ShardBits {
		s.layout.Logger.Info("the dedup index's layout marker sets its shard bits: following it",
			"marker", string(v), "shard_bits", m.ShardBits, "configured", s.layout.ShardBits)
		s.layout.ShardBits = m.ShardBits
	}
	s.mk, s.stored = m, true
	return nil
}

// storedMarker returns the marker in force, writing this proxy's if the
// server has none (SET NX: the first proxy of a fleet to save sets it, the
// others follow).
func (s *redisStore) storedMarker(ctx context.Context) (marker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored {
		return s.mk, nil
	}
	if err := s.c.SetNX(ctx, s.markerKey(), s.mk.bytes(), 0).Err(); err != nil {
		return marker{}, fmt.Errorf("writing the dedup layout marker: %w", err)
	}
	v, err := s.c.Get(ctx, s.markerKey()).Bytes()
	if err != nil {
		return marker{}, fmt.Errorf("reading the dedup layout marker: %w", err)
	}
	if err := s.adoptLocked(v); err != nil {
		return marker{}, err
	}
	s.read = true
	return s.mk, nil
}

// Close implements Store: it releases the shared client (closed with its
// last user).
func (s *redisStore) Close() error {
	return s.guard.Close(s.release)
}

// execPipe runs a pipeline. Exec reports the first failed command, which
// may just be a missing key (redis.Nil): the caller looks at each command
// too. A connection that could not be set up (a wrong password, a database
// number the server does not have) fails Exec and leaves every command
// without an error.
func execPipe(ctx context.Context, pipe redis.Pipeliner, what string) error {
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%s redis: %w", what, err)
	}
	return nil
}

// bytesOf returns a command's value, nil for a missing key.
func bytesOf(cmd *redis.StringCmd) ([]byte, error) {
	v, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading from redis: %w", err)
	}
	return v, nil
}

// globEscape quotes the glob characters of s for SCAN MATCH.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}
