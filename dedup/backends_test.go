package dedup_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// embeddedOpener gives each test its own bbolt file; every open goes
// through fresh store.Handles, so a reopen really reopens the file.
func embeddedOpener(t *testing.T) func() (dedup.Store, error) {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	return func() (dedup.Store, error) { return dedup.Open(spec, &store.Handles{}) }
}

// redisOpener gives each test its own key prefix on one server (base is a
// redistest URL, ending in its prefix); every open makes a new client.
func redisOpener(base string) dedupstest.Opener {
	return func(t *testing.T) func() (dedup.Store, error) {
		spec, err := store.Parse(base + url.QueryEscape(t.Name()) + ":")
		require.NoError(t, err)
		return func() (dedup.Store, error) { return dedup.Open(spec, &store.Handles{}) }
	}
}

func TestEmbeddedContract(t *testing.T) {
	dedupstest.Run(t, embeddedOpener)
}

func TestRedisContract(t *testing.T) {
	dedupstest.Run(t, redisOpener(redistest.URL(t)))
}

func TestMemStoreContract(t *testing.T) {
	dedupstest.Run(t, func(t *testing.T) func() (dedup.Store, error) {
		m := &dedupstest.MemStore{}
		return func() (dedup.Store, error) { m.Reopen(); return m, nil }
	})
}

// TestEmbeddedLayout: entries sit in the bucket "dedup" under
// digest|bucket with warcprox's JSON, and the other buckets of a file
// shared with stats are left alone, as is the shared handle.
func TestEmbeddedLayout(t *testing.T) {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	var h store.Handles
	db, release, err := h.Bolt(spec) // the stats package, say
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("stats"))
		if err != nil {
			return err
		}
		return b.Put([]byte("sha1:AAAA|"), []byte("not ours"))
	}))

	s, err := dedup.Open(spec, &h)
	require.NoError(t, err)
	e := dedup.Entry{ID: "<urn:uuid:1>", URL: "http://ex.com/ü", Date: "2024-03-01T12:34:56Z"}
	require.NoError(t, s.Save(context.Background(), []dedup.Item{
		{Key: dedup.Key{Digest: "sha1:AAAA", Bucket: "b 1"}, Entry: e},
		{Key: dedup.Key{Digest: "sha1:AAAA"}, Entry: e},
	}))
	require.NoError(t, s.Close())
	require.NotEmpty(t, db.Path(), "closing dedup keeps the shared file open for stats")

	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		got := map[string]string{}
		require.NoError(t, tx.Bucket([]byte("dedup")).ForEach(func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		}))
		want := `{"id":"<urn:uuid:1>","url":"http://ex.com/\u00c3\u00bc","date":"2024-03-01T12:34:56Z"}`
		require.Equal(t, map[string]string{"sha1:AAAA|b 1": want, "sha1:AAAA|": want}, got)
		require.Equal(t, "not ours", string(tx.Bucket([]byte("stats")).Get([]byte("sha1:AAAA|"))))
		return nil
	}))
	require.NoError(t, release())
}

// TestEmbeddedKeyTooLong: a bucket name too long for a bbolt key is not
// stored and not found, and does not fail the batch it came in.
func TestEmbeddedKeyTooLong(t *testing.T) {
	s, err := embeddedOpener(t)()
	require.NoError(t, err)
	defer s.Close()
	long := dedup.Key{Digest: "sha1:AAAA", Bucket: string(make([]byte, bolt.MaxKeySize))}
	ok := dedup.Key{Digest: "sha1:AAAA", Bucket: "b"}
	e := dedup.Entry{ID: "<urn:uuid:1>", URL: "http://ex.com/", Date: "2024-03-01T12:34:56Z"}
	require.NoError(t, s.Save(context.Background(), []dedup.Item{{Key: long, Entry: e}, {Key: ok, Entry: e}}))
	got, err := s.Lookup(context.Background(), []dedup.Key{long, ok})
	require.NoError(t, err)
	require.Nil(t, got[0])
	require.Equal(t, &e, got[1])
}

// TestRedisLayout: one Redis string per entry under
// prefix+"dedup:"+digest|bucket, holding warcprox's JSON, no expiry.
func TestRedisLayout(t *testing.T) {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	s, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer s.Close()
	e := dedup.Entry{ID: "<urn:uuid:1>", URL: "http://ex.com/ü", Date: "2024-03-01T12:34:56Z"}
	require.NoError(t, s.Save(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: "sha1:AAAA", Bucket: "b 1"}, Entry: e}}))

	c := redis.NewClient(spec.Redis)
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Keys(ctx, spec.KeyPrefix+"*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{spec.KeyPrefix + "dedup:sha1:AAAA|b 1"}, keys)
	v, err := c.Get(ctx, keys[0]).Result()
	require.NoError(t, err)
	require.Equal(t, `{"id":"<urn:uuid:1>","url":"http://ex.com/\u00c3\u00bc","date":"2024-03-01T12:34:56Z"}`, v)
	ttl, err := c.TTL(ctx, keys[0]).Result()
	require.NoError(t, err)
	require.Equal(t, int64(-1), int64(ttl), "no expiry")

	// A value some other tool wrote that does not parse is not found,
	// and does not fail the other keys of the batch.
	require.NoError(t, c.Set(ctx, spec.KeyPrefix+"dedup:sha1:BBBB|", "garbage", 0).Err())
	got, err := s.Lookup(ctx, []dedup.Key{{Digest: "sha1:BBBB"}, {Digest: "sha1:AAAA", Bucket: "b 1"}})
	require.NoError(t, err)
	require.Nil(t, got[0])
	require.Equal(t, &e, got[1])
}

// TestRedisDown: with no server to talk to, Lookup and Save fail (the
// Index then retries saves; the proxy archives in full).
func TestRedisDown(t *testing.T) {
	spec, err := store.Parse("redis://127.0.0.1:1/0")
	require.NoError(t, err)
	spec.Redis.MaxRetries = -1
	spec.Redis.DialerRetries = 1
	s, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Lookup(context.Background(), []dedup.Key{{Digest: "sha1:AAAA"}})
	require.Error(t, err)
	require.Error(t, s.Save(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: "sha1:AAAA"}}}))
}

// TestRedisRefusesConnection: a server that is up but refuses the
// connection's setup (a database number it does not have, as with a wrong
// password) fails Lookup with its reason, rather than answering "not found"
// and counting a miss where the operator should see lookup errors.
func TestRedisRefusesConnection(t *testing.T) {
	spec, err := store.Parse("redis://" + redistest.Addr(t) + "/99")
	require.NoError(t, err)
	s, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Lookup(context.Background(), []dedup.Key{{Digest: "sha1:AAAA"}, {Digest: "sha1:BBBB"}})
	require.ErrorContains(t, err, "DB index is out of range")
	require.ErrorContains(t, s.Save(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: "sha1:AAAA"}}}), "DB index is out of range")
}
