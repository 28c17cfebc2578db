package dedup_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

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
