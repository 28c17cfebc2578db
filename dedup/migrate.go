package dedup

import (
	"context"
	"errors"
	"strings"
)

// MigrateStats counts what Migrate did with the entries of the old
// layout.
type MigrateStats struct {
	// Read is the old entries seen.
	Read int64
	// Converted were written to the compact layout and removed from the
	// old one; Superseded were removed because the compact layout had
	// a newer entry for their key already.
	Converted, Superseded int64
	// Kept stay in the old layout, where lookups look for them: their
	// digest does not decode, or (Redis) their packed value would pass 64
	// bytes (their hash then points at them).
	Kept int64
	// Unreadable values (not warcprox's JSON) are left as they are and
	// never found.
	Unreadable int64
}

// ErrNoMigration is Migrate's error for a store that has no old layout
// (one not opened by Open).
var ErrNoMigration = errors.New("dedup: this store has no old layout to migrate")

// migrator is a Store whose entries of the old layout Migrate converts.
type migrator interface {
	migrate(ctx context.Context, progress func(MigrateStats)) (MigrateStats, error)
}

// Migrate converts every entry of the old layout in s to the compact one,
// removing the old entry, and then marks the index migrated, after which
// proxies started from then on look up the compact layout only. An entry
// the compact layout already holds a newer one for is only removed (a
// migration never replaces an entry). It is idempotent: run again, it
// finds only what it keeps. progress, if not nil, is called now and then
// with the counts so far. Proxies of the previous release must be stopped
// first: their saves would go to the old layout, which a migrated index no
// longer reads.
func Migrate(ctx context.Context, s Store, progress func(MigrateStats)) (MigrateStats, error) {
	m, ok := s.(migrator)
	if !ok {
		return MigrateStats{}, ErrNoMigration
	}
	if progress == nil {
		progress = func(MigrateStats) {}
	}
	return m.migrate(ctx, progress)
}

// parseStorageKey is the inverse of storageKey.
func parseStorageKey(sk string) (Key, bool) {
	d, b, ok := strings.Cut(sk, "|")
	if !ok {
		return Key{}, false
	}
	if strings.Contains(d, "%") {
		d = strings.NewReplacer("%7C", "|", "%25", "%").Replace(d)
	}
	return Key{Digest: d, Bucket: b}, true
}
