package dedup

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// defaultMigrateBatch is how many old entries one write transaction
// converts.
const defaultMigrateBatch = 10000

// migrate implements migrator: batches of the old bucket, each converted
// and removed in one write transaction, then the marker.
func (s *embeddedStore) migrate(ctx context.Context, progress func(MigrateStats)) (MigrateStats, error) {
	leave, err := s.guard.Enter(ctx, ErrClosed)
	if err != nil {
		return MigrateStats{}, err
	}
	defer leave()
	var st MigrateStats
	var after []byte // the last key kept in the old bucket
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		done := false
		err := s.db.Update(func(tx *bolt.Tx) error {
			var err error
			after, done, err = migrateBoltBatch(tx, after, s.migrateBatch, &st)
			return err
		})
		if err != nil {
			return st, fmt.Errorf("migrating the embedded database: %w", err)
		}
		progress(st)
		if done {
			break
		}
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(boltBucket2).Put(boltMarker, marker{Layout: layoutCompact, Migrated: true}.bytes())
	})
	if err != nil {
		return st, fmt.Errorf("marking the embedded database migrated: %w", err)
	}
	return st, nil
}

// migrateBoltBatch converts up to batch old entries after the key after,
// and reports the last key it kept and whether the bucket is done.
func migrateBoltBatch(tx *bolt.Tx, after []byte, batch int, st *MigrateStats) ([]byte, bool, error) {
	old, b2 := tx.Bucket(boltBucket), tx.Bucket(boltBucket2)
	if old == nil || b2 == nil {
		return nil, false, fmt.Errorf("bucket %q or %q missing", boltBucket, boltBucket2)
	}
	c := old.Cursor()
	k, v := c.First()
	if after != nil {
		k, v = c.Seek(after)
		if k != nil && bytes.Equal(k, after) {
			k, v = c.Next()
		}
	}
	for range batch {
		if k == nil {
			return after, true, nil
		}
		st.Read++
		convert, err := migrateBoltEntry(b2, k, v, st)
		if err != nil {
			return nil, false, err
		}
		if convert {
			// After Delete, seeking the deleted key finds the next one.
			gone := bytes.Clone(k)
			if err := c.Delete(); err != nil {
				return nil, false, err
			}
			k, v = c.Seek(gone)
			continue
		}
		after = bytes.Clone(k)
		k, v = c.Next()
	}
	return after, false, nil
}

// migrateBoltEntry writes one old entry to the compact layout unless it
// is there; false: the old entry stays.
func migrateBoltEntry(b2 *bolt.Bucket, k, v []byte, st *MigrateStats) (bool, error) {
	key, ok := parseStorageKey(string(k))
	if !ok {
		st.Unreadable++
		return false, nil
	}
	e, err := decodeEntry(v)
	if err != nil {
		st.Unreadable++
		return false, nil
	}
	bk, ok := embeddedKey(key)
	if !ok || len(bk) > bolt.MaxKeySize {
		st.Kept++
		return false, nil
	}
	if b2.Get(bk) != nil {
		st.Superseded++
		return true, nil
	}
	st.Converted++
	return true, b2.Put(bk, packEntry(e, true))
}
