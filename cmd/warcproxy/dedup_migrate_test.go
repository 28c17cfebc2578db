package main

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

const oldEntryJSON = `{"id":"<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>","url":"http://example.com/","date":"2026-12-04T18:04:59Z"}`

func payloadDigest(p string) string {
	s := sha1.Sum([]byte(p))
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// oldEmbeddedIndex writes an embedded file as the previous release did:
// one JSON entry per digest|bucket in the bucket "dedup".
func oldEmbeddedIndex(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "warcproxy.db")
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("dedup"))
		if err != nil {
			return err
		}
		for _, k := range []string{payloadDigest("a") + "|", payloadDigest("b") + "|crawl", "sha1:ODD|"} {
			if err := b.Put([]byte(k), []byte(oldEntryJSON)); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, db.Close())
	return path
}

// TestDedupMigrateCommand runs `warcproxy dedup migrate` as an operator
// does: what it refuses (exit 2), a file a proxy holds (exit 1), and an
// index of the previous release converted (exit 0), then found.
func TestDedupMigrateCommand(t *testing.T) {
	held := oldEmbeddedIndex(t)
	db, err := bolt.Open(held, 0o600, nil) // a running proxy, say
	require.NoError(t, err)
	defer db.Close()

	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no spec", []string{"dedup", "migrate"}, 2, []string{"--dedup-db SPEC is required"}},
		{"no subcommand", []string{"dedup"}, 2, []string{"name a subcommand: import or migrate"}},
		{"unknown subcommand", []string{"dedup", "migrat"}, 2, []string{`unknown subcommand "migrat" (did you mean migrate?)`}},
		{"missing file", []string{"dedup", "migrate", "--dedup-db", "embedded:" + filepath.Join(t.TempDir(), "none.db")}, 2, []string{"no such file"}},
		{"none", []string{"dedup", "migrate", "--dedup-db", "none"}, 2, []string{"no index to migrate"}},
		{"bad shard bits", []string{"dedup", "migrate", "--dedup-db", "embedded:" + held, "--dedup-shard-bits", "40"}, 2, []string{"--dedup-shard-bits: want 1 to 24, got 40"}},
		{"misspelt flag", []string{"dedup", "migrate", "--dedup-bd", "x"}, 2, []string{"--dedup-db"}},
		{"held by a proxy", []string{"dedup", "migrate", "--dedup-db", "embedded:" + held}, 2, []string{"another process has it open"}},
		{"help", []string{"dedup", "migrate", "--help"}, 0, []string{"Usage: warcproxy dedup migrate"}},
		{"old embedded index", []string{"dedup", "migrate", "--dedup-db", "embedded:" + oldEmbeddedIndex(t)}, 0,
			[]string{"3 old entries read, 2 converted, 0 already newer", "1 kept in the old layout", "marked migrated"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runMain(t, tt.args...)
			require.Equal(t, tt.code, code, out)
			for _, w := range tt.want {
				require.Contains(t, out, w)
			}
		})
	}
}

// TestDedupMigrateCommandRedis: an index of the previous release on Redis
// is converted, its entries then found, and a second run finds nothing
// left to convert.
func TestDedupMigrateCommandRedis(t *testing.T) {
	u := redistest.URL(t)
	spec, err := store.Parse(u)
	require.NoError(t, err)
	c := redis.NewClient(spec.Redis)
	defer c.Close()
	ctx := context.Background()
	for _, k := range []string{payloadDigest("a") + "|", payloadDigest("b") + "|crawl"} {
		require.NoError(t, c.Set(ctx, spec.KeyPrefix+"dedup:"+k, oldEntryJSON, 0).Err())
	}
	code, out := runMain(t, "dedup", "migrate", "--dedup-db", u)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "2 old entries read, 2 converted")
	require.Contains(t, c.Get(ctx, spec.KeyPrefix+"dedup:layout").Val(), `"migrated":true`)
	n, err := c.Exists(ctx, spec.KeyPrefix+"dedup:"+payloadDigest("a")+"|").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the old key is gone")

	s, err := dedup.Open(spec, nil)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Lookup(ctx, []dedup.Key{{Digest: payloadDigest("a"), URL: "http://example.com/"}, {Digest: payloadDigest("b"), Bucket: "crawl"}})
	require.NoError(t, err)
	want := &dedup.Entry{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://example.com/", Date: "2026-12-04T18:04:59Z"}
	require.Equal(t, []*dedup.Entry{want, want}, got)

	code, out = runMain(t, "dedup", "migrate", "--dedup-db", u)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "0 old entries read", "idempotent")
}
