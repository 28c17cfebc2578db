package dedup_test

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"encoding/hex"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// sum is a payload's sha1 and its digest as the proxy writes it.
func sum(payload string) ([]byte, string) {
	s := sha1.Sum([]byte(payload))
	return s[:], "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

var layoutEntry = dedup.Entry{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/ü", Date: "2026-12-04T18:04:59.123456Z"}

// TestEmbeddedLayout: entries sit in the bucket "dedup2" under algorithm
// byte + digest bytes + bucket, packed with the full URL; the marker says
// layout 2; a digest that does not decode keeps the old layout (bucket
// "dedup", digest|bucket, warcprox's JSON); the other buckets of a file
// shared with stats are left alone, as is the shared handle.
func TestEmbeddedLayout(t *testing.T) {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	var h store.Handles
	db, release, err := h.Bolt(spec) // the stats package, say
	require.NoError(t, err)
	defer func() { _ = release() }()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("stats"))
		if err != nil {
			return err
		}
		return b.Put([]byte("sha1:AAAA|"), []byte("not ours"))
	}))

	s, err := dedup.Open(spec, &h)
	require.NoError(t, err)
	raw, digest := sum("payload")
	require.NoError(t, s.Save(context.Background(), []dedup.Item{
		{Key: dedup.Key{Digest: digest, Bucket: "b 1"}, Entry: layoutEntry},
		{Key: dedup.Key{Digest: "sha1:AAAA"}, Entry: layoutEntry},
	}))
	require.NoError(t, s.Close())
	require.NotEmpty(t, db.Path(), "closing dedup keeps the shared file open for stats")

	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		got := map[string]int{}
		require.NoError(t, tx.Bucket([]byte("dedup2")).ForEach(func(k, v []byte) error {
			got[string(k)] = len(v)
			return nil
		}))
		key := string(append(append([]byte{1}, raw...), "b 1"...))
		require.Equal(t, []string{"\x00layout", key}, slices.Sorted(maps.Keys(got)))
		require.Equal(t, `{"layout":2}`, string(tx.Bucket([]byte("dedup2")).Get([]byte("\x00layout"))))
		require.Equal(t, 1+16+9+8+1+len(layoutEntry.URL), got[key], "packed value: flags, ID, date (seconds, digits, fraction), URL hash, URL")

		old := map[string]string{}
		require.NoError(t, tx.Bucket([]byte("dedup")).ForEach(func(k, v []byte) error {
			old[string(k)] = string(v)
			return nil
		}))
		require.Equal(t, map[string]string{"sha1:AAAA|": `{"id":"<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>","url":"http://ex.com/\u00c3\u00bc","date":"2026-12-04T18:04:59.123456Z"}`}, old)
		require.Equal(t, "not ours", string(tx.Bucket([]byte("stats")).Get([]byte("sha1:AAAA|"))))
		return nil
	}))
}

// TestRedisLayout: an entry is a field of a listpack-encoded hash
// PREFIX dedup2:sha1:SHARD:BUCKET (SHARD the first 20 bits of the digest
// in hex, field the digest's bytes after its first two), its value at most
// 64 bytes; its URL is in the URL table once; the marker says layout 2
// with 20 shard bits; a digest that does not decode is one string in the
// old layout, as is an entry too big for a hash value (pointed at from
// its hash); nothing expires.
func TestRedisLayout(t *testing.T) {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	s, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	raw, digest := sum("payload")
	rawBig, digestBig := sum("big")
	big := dedup.Entry{ID: "<urn:x-other-tool:" + strings.Repeat("9", 50) + ">", URL: "http://ex.com/big", Date: "2026-12-04T18:04:59Z"}
	require.NoError(t, s.Save(ctx, []dedup.Item{
		{Key: dedup.Key{Digest: digest, Bucket: "b 1"}, Entry: layoutEntry},
		{Key: dedup.Key{Digest: digest, Bucket: "b 2"}, Entry: layoutEntry},
		{Key: dedup.Key{Digest: "sha1:AAAA", Bucket: "b 1"}, Entry: layoutEntry},
		{Key: dedup.Key{Digest: digestBig}, Entry: big},
	}))

	c := redis.NewClient(spec.Redis)
	defer c.Close()
	p := spec.KeyPrefix
	sh := hex.EncodeToString(raw[:3])[:5]
	hash1, hash2 := p+"dedup2:sha1:"+sh+":b 1", p+"dedup2:sha1:"+sh+":b 2"
	hashBig := p + "dedup2:sha1:" + hex.EncodeToString(rawBig[:3])[:5] + ":"
	u := layoutEntry.URL
	h := fnv64a(u)
	urlKey := p + "dedup2url:" + hex.EncodeToString(h[:3])[:5]
	keys, err := c.Keys(ctx, p+"*").Result()
	require.NoError(t, err)
	slices.Sort(keys)
	want := []string{p + "dedup2:sha1:" + hex.EncodeToString(rawBig[:3])[:5] + ":", hash1, hash2, urlKey,
		p + "dedup:layout", p + "dedup:" + digestBig + "|", p + "dedup:sha1:AAAA|b 1"}
	slices.Sort(want)
	require.Equal(t, want, keys)
	require.Equal(t, `{"layout":2,"shard_bits":20}`, c.Get(ctx, p+"dedup:layout").Val())

	v, err := c.HGet(ctx, hash1, string(raw[2:])).Bytes()
	require.NoError(t, err)
	require.LessOrEqual(t, len(v), 64)
	require.Equal(t, "listpack", c.ObjectEncoding(ctx, hash1).Val())
	require.Equal(t, u, c.HGet(ctx, urlKey, string(h)).Val())
	require.Equal(t, []byte{8}, []byte(c.HGet(ctx, hashBig, string(rawBig[2:])).Val()), "a pointer to the old layout, which holds the URL")
	require.Contains(t, c.Get(ctx, p+"dedup:"+digestBig+"|").Val(), `"id":"<urn:x-other-tool:`)
	for _, k := range keys {
		require.Equal(t, int64(-1), int64(c.TTL(ctx, k).Val()), "no expiry: %s", k)
	}

	got, err := s.Lookup(ctx, []dedup.Key{
		{Digest: digest, Bucket: "b 1", URL: u}, {Digest: digest, Bucket: "b 2", URL: "http://other/"},
		{Digest: "sha1:AAAA", Bucket: "b 1"}, {Digest: digestBig, URL: "http://other/"}, {Digest: digest},
	})
	require.NoError(t, err)
	require.Equal(t, []*dedup.Entry{&layoutEntry, &layoutEntry, &layoutEntry, &big, nil}, got)

	// A value some other tool wrote that does not parse is not found,
	// and does not fail the other keys of the batch.
	require.NoError(t, c.HSet(ctx, hash1, string(raw[2:]), "garbage").Err())
	require.NoError(t, c.Set(ctx, p+"dedup:sha1:BBBB|", "garbage", 0).Err())
	got, err = s.Lookup(ctx, []dedup.Key{{Digest: digest, Bucket: "b 1"}, {Digest: "sha1:BBBB"}, {Digest: digest, Bucket: "b 2"}})
	require.NoError(t, err)
	require.Equal(t, []*dedup.Entry{nil, nil, &layoutEntry}, got)
}

// fnv64a is FNV-1a 64, big-endian: the URL hash as the layout stores it.
func fnv64a(s string) []byte {
	h := uint64(0xcbf29ce484222325)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(h >> (56 - 8*i))
	}
	return b
}

// TestRedisWithoutURLTable: with the URL table off, a hit of the same URL
// is still a hit, and one of another URL is a miss counted as
// url_unknown; no URL is stored.
func TestRedisWithoutURLTable(t *testing.T) {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	s, err := dedup.OpenLayout(spec, nil, dedup.Layout{NoURLTable: true})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	ix, err := dedup.NewIndex(s, dedup.Options{}, nil, reg)
	require.NoError(t, err)
	defer ix.Close(context.Background())
	ctx := context.Background()
	_, digest := sum("payload")
	ix.Save(digest, nil, layoutEntry)
	require.NoError(t, ix.Flush(ctx))

	e, _, err := ix.LookupURI(ctx, digest, layoutEntry.URL, nil)
	require.NoError(t, err)
	require.Equal(t, &layoutEntry, e)
	e, _, err = ix.LookupURI(ctx, digest, "http://ex.com/other", nil)
	require.NoError(t, err)
	require.Nil(t, e, "another URL: a miss, its capture written in full")

	c := redis.NewClient(spec.Redis)
	defer c.Close()
	keys, err := c.Keys(ctx, spec.KeyPrefix+"dedup2url:*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)

	require.NoError(t, promtest.GatherAndCompare(reg, strings.NewReader(`
# HELP warcproxy_dedup_lookups_total Dedup lookups (one per capture looked up) by result: hit, miss, url_unknown (a payload archived before at another URL, in a Redis index without its URL table: a miss, the capture is written in full), error, skipped (not asked: the store kept failing, see warcproxy_dedup_circuit_open).
# TYPE warcproxy_dedup_lookups_total counter
warcproxy_dedup_lookups_total{result="error"} 0
warcproxy_dedup_lookups_total{result="hit"} 1
warcproxy_dedup_lookups_total{result="miss"} 0
warcproxy_dedup_lookups_total{result="skipped"} 0
warcproxy_dedup_lookups_total{result="url_unknown"} 1
`), "warcproxy_dedup_lookups_total"))
}

// TestRedisMarkerWins: a proxy configured with other shard bits than the
// index's marker follows the marker, so that a fleet finds each other's
// entries.
func TestRedisMarkerWins(t *testing.T) {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	ctx := context.Background()
	c := redis.NewClient(spec.Redis)
	defer c.Close()
	require.NoError(t, c.Set(ctx, spec.KeyPrefix+"dedup:layout", `{"layout":2,"shard_bits":12}`, 0).Err())

	s, err := dedup.OpenLayout(spec, nil, dedup.Layout{ShardBits: 20})
	require.NoError(t, err)
	defer s.Close()
	raw, digest := sum("payload")
	require.NoError(t, s.Save(ctx, []dedup.Item{{Key: dedup.Key{Digest: digest}, Entry: layoutEntry}}))
	n, err := c.HLen(ctx, spec.KeyPrefix+"dedup2:sha1:"+hex.EncodeToString(raw[:2])[:3]+":").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "12 shard bits: 3 hex digits")

	other, err := dedup.OpenLayout(spec, nil, dedup.Layout{ShardBits: 16})
	require.NoError(t, err)
	defer other.Close()
	got, err := other.Lookup(ctx, []dedup.Key{{Digest: digest}})
	require.NoError(t, err)
	require.Equal(t, &layoutEntry, got[0])

	require.NoError(t, c.Set(ctx, spec.KeyPrefix+"dedup:layout", `{"layout":3}`, 0).Err())
	third, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer third.Close()
	_, err = third.Lookup(ctx, []dedup.Key{{Digest: digest}})
	require.ErrorContains(t, err, "layout 3 is not one this release knows")
}
