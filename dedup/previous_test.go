package dedup_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/testutil/redistest"
)

// previousIndex is an index written by the previous release (one entry
// per key digest|bucket, warcprox's JSON), in one backend.
type previousIndex struct {
	spec store.Spec
	// put writes one old entry as the previous release did.
	put func(t *testing.T, storageKey, json string)
	// oldKeys lists the old-layout keys left.
	oldKeys func(t *testing.T) []string
}

func previousEmbedded(t *testing.T) previousIndex {
	spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "warcproxy.db"))
	require.NoError(t, err)
	withDB := func(t *testing.T, fn func(tx *bolt.Tx) error, write bool) {
		db, err := bolt.Open(spec.Path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		require.NoError(t, err)
		defer db.Close()
		if write {
			require.NoError(t, db.Update(fn))
		} else {
			require.NoError(t, db.View(fn))
		}
	}
	return previousIndex{
		spec: spec,
		put: func(t *testing.T, k, v string) {
			withDB(t, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte("dedup"))
				if err != nil {
					return err
				}
				return b.Put([]byte(k), []byte(v))
			}, true)
		},
		oldKeys: func(t *testing.T) []string {
			var keys []string
			withDB(t, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("dedup")).ForEach(func(k, _ []byte) error {
					keys = append(keys, string(k))
					return nil
				})
			}, false)
			return keys
		},
	}
}

func previousRedis(t *testing.T) previousIndex {
	spec, err := store.Parse(redistest.URL(t))
	require.NoError(t, err)
	c := redis.NewClient(spec.Redis)
	t.Cleanup(func() { _ = c.Close() })
	return previousIndex{
		spec: spec,
		put: func(t *testing.T, k, v string) {
			require.NoError(t, c.Set(context.Background(), spec.KeyPrefix+"dedup:"+k, v, 0).Err())
		},
		oldKeys: func(t *testing.T) []string {
			keys, err := c.Keys(context.Background(), spec.KeyPrefix+"dedup:*|*").Result()
			require.NoError(t, err)
			for i := range keys {
				keys[i] = keys[i][len(spec.KeyPrefix+"dedup:"):]
			}
			return keys
		},
	}
}

var previousBackends = []struct {
	name string
	make func(t *testing.T) previousIndex
}{
	{"embedded", previousEmbedded},
	{"redis", previousRedis},
}

// oldJSON is an entry as the previous release wrote it.
const oldJSON = `{"id":"<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>","url":"http://ex.com/\u00c3\u00bc","date":"2026-12-04T18:04:59.123456Z"}`

// TestPreviousReleaseIndex: entries written by the previous release are
// still found, by their URL or another, beside entries in the new layout;
// a new save of one of their keys wins over the old entry.
func TestPreviousReleaseIndex(t *testing.T) {
	for _, b := range previousBackends {
		t.Run(b.name, func(t *testing.T) {
			prev := b.make(t)
			_, d1 := sum("one")
			_, d2 := sum("two")
			prev.put(t, d1+"|", oldJSON)
			prev.put(t, d2+"|crawl", oldJSON)
			prev.put(t, "sha1:NOTADIGEST|", oldJSON)

			s, err := dedup.Open(prev.spec, nil)
			require.NoError(t, err)
			defer s.Close()
			ctx := context.Background()
			got, err := s.Lookup(ctx, []dedup.Key{
				{Digest: d1, URL: layoutEntry.URL}, {Digest: d2, Bucket: "crawl", URL: "http://other/"},
				{Digest: "sha1:NOTADIGEST"}, {Digest: d2}, {Digest: dedupstest.Digest(1)},
			})
			require.NoError(t, err)
			require.Equal(t, []*dedup.Entry{&layoutEntry, &layoutEntry, &layoutEntry, nil, nil}, got)

			_, d3 := sum("three")
			added, err := s.Add(ctx, []dedup.Item{
				{Key: dedup.Key{Digest: d2, Bucket: "crawl"}, Entry: dedupstest.Entry(8)},
				{Key: dedup.Key{Digest: "sha1:NOTADIGEST"}, Entry: dedupstest.Entry(8)},
				{Key: dedup.Key{Digest: d3}, Entry: dedupstest.Entry(8)},
			})
			require.NoError(t, err)
			require.Equal(t, []bool{false, false, true}, added, "an import never replaces an old entry")

			newer := dedupstest.Entry(9)
			require.NoError(t, s.Save(ctx, []dedup.Item{{Key: dedup.Key{Digest: d1}, Entry: newer}}))
			got, err = s.Lookup(ctx, []dedup.Key{{Digest: d1}, {Digest: d2, Bucket: "crawl"}})
			require.NoError(t, err)
			require.Equal(t, []*dedup.Entry{&newer, &layoutEntry}, got, "the new save wins")
			require.NoError(t, s.Close())
			require.Len(t, prev.oldKeys(t), 3, "saves go to the new layout only")
		})
	}
}

// TestMigratePreviousRelease: `dedup migrate` converts an index written by
// the previous release; its entries are then found in the new layout only,
// what cannot be converted stays where lookups still find it, and a second
// run changes nothing.
func TestMigratePreviousRelease(t *testing.T) {
	for _, b := range previousBackends {
		t.Run(b.name, func(t *testing.T) {
			prev := b.make(t)
			ctx := context.Background()
			var keys []dedup.Key
			var want []*dedup.Entry
			for i := range 25 {
				_, d := sum(strconv.Itoa(i))
				e := dedupstest.Entry(i)
				k := dedup.Key{Digest: d, Bucket: []string{"", "crawl", "a|b"}[i%3]}
				prev.put(t, d+"|"+k.Bucket, string(dedupJSON(e)))
				keys, want = append(keys, k), append(want, &e)
			}
			prev.put(t, "sha1:NOTADIGEST|", oldJSON)
			keys, want = append(keys, dedup.Key{Digest: "sha1:NOTADIGEST"}), append(want, &layoutEntry)
			_, dBig := sum("big")
			big := dedup.Entry{ID: "<urn:x-other-tool:" + strings.Repeat("9", 60) + ">", URL: "http://ex.com/big", Date: "2026-12-04T18:04:59Z"}
			prev.put(t, dBig+"|", string(dedupJSON(big)))
			keys, want = append(keys, dedup.Key{Digest: dBig}), append(want, &big)
			_, dGarbage := sum("garbage")
			prev.put(t, dGarbage+"|", "not json")

			s, err := dedup.Open(prev.spec, nil)
			require.NoError(t, err)
			newer := dedupstest.Entry(99)
			require.NoError(t, s.Save(ctx, []dedup.Item{{Key: keys[0], Entry: newer}}))
			want[0] = &newer

			st, err := dedup.Migrate(ctx, s, nil)
			require.NoError(t, err)
			// 25 entries (one superseded by the newer save), one digest
			// that does not decode, one big entry, one unreadable.
			wantSt := dedup.MigrateStats{Read: 28, Converted: 25, Superseded: 1, Kept: 1, Unreadable: 1}
			if b.name == "redis" {
				wantSt.Kept, wantSt.Converted = 2, 24 // the big one: a pointer in its hash
			}
			require.Equal(t, wantSt, st)
			got, err := s.Lookup(ctx, keys)
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.NoError(t, s.Close())
			left := prev.oldKeys(t)
			slices.Sort(left)
			wantLeft := []string{dGarbage + "|", "sha1:NOTADIGEST|"}
			if b.name == "redis" {
				wantLeft = append(wantLeft, dBig+"|")
			}
			slices.Sort(wantLeft)
			require.Equal(t, wantLeft, left)

			// Migrated: an old entry of a digest that decodes is no
			// longer looked for (none is left; this one is planted).
			_, dLate := sum("late")
			prev.put(t, dLate+"|", oldJSON)
			s, err = dedup.Open(prev.spec, nil)
			require.NoError(t, err)
			defer s.Close()
			got, err = s.Lookup(ctx, append(keys, dedup.Key{Digest: dLate}))
			require.NoError(t, err)
			require.Equal(t, append(want, nil), got)

			st, err = dedup.Migrate(ctx, s, nil)
			require.NoError(t, err)
			require.Zero(t, st.Superseded)
			require.Equal(t, int64(1), st.Converted, "only the planted one")
		})
	}
}

// dedupJSON is an entry as the previous release wrote it (ASCII only).
func dedupJSON(e dedup.Entry) []byte {
	b, _ := json.Marshal(e)
	return b
}
