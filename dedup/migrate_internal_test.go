package dedup

import (
	"context"
	"encoding/base32"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/warcproxy/warcproxy/internal/store"
)

// TestMigrateEmbeddedBatches: a migration in many small write
// transactions, with entries kept and converted mixed in key order, sees
// every entry once and leaves only the kept ones.
func TestMigrateEmbeddedBatches(t *testing.T) {
	for _, batch := range []int{1, 2, 3, 7, 1000} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			spec, err := store.Parse("embedded:" + filepath.Join(t.TempDir(), "x.db"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			es := s.(*embeddedStore)
			es.migrateBatch = batch
			const n = 40
			e := Entry{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "2026-12-04T18:04:59Z"}
			var keys []Key
			err = es.db.Update(func(tx *bolt.Tx) error {
				for i := range n {
					k := Key{Digest: fmt.Sprintf("sha1:%032d", i)} // not base32: kept
					if i%3 != 0 {
						k.Digest = testDigest(i)
					}
					keys = append(keys, k)
					if err := tx.Bucket(boltBucket).Put([]byte(storageKey(k)), encodeEntry(e)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := Migrate(context.Background(), s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := (MigrateStats{Read: n, Converted: n - (n+2)/3, Kept: (n + 2) / 3}); st != want {
				t.Fatalf("stats %+v, want %+v", st, want)
			}
			got, err := s.Lookup(context.Background(), keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				if g == nil || *g != e {
					t.Fatalf("key %d: %v", i, g)
				}
			}
			left := 0
			_ = es.db.View(func(tx *bolt.Tx) error {
				left = tx.Bucket(boltBucket).Stats().KeyN
				return nil
			})
			if left != (n+2)/3 {
				t.Fatalf("%d old entries left, want %d", left, (n+2)/3)
			}
		})
	}
}

// testDigest is a base32 sha1-sized digest for i.
func testDigest(i int) string {
	b := make([]byte, 20)
	b[0], b[19] = byte(i), byte(i*7)
	return "sha1:" + base32.StdEncoding.EncodeToString(b)
}
