package dedup

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Layout tunes the compact layout (layout 2) of a store; its zero value
// takes the defaults.
type Layout struct {
	// ShardBits is how many leading bits of a digest name its Redis hash
	// (default DefaultShardBits). A marker in the store wins over it.
	ShardBits int
	// NoURLTable leaves out the Redis URL table: a hit of another URL
	// than the one looked up is then a miss (Entry.URLUnknown).
	NoURLTable bool
	// Logger says when the marker overrides ShardBits (nil: no log).
	Logger *slog.Logger
}

const (
	// DefaultShardBits makes 2^20 (about a million) Redis hashes per
	// algorithm and bucket: about 10 entries each at 10 million entries,
	// 95 at 100 million, under Redis' default hash-max-listpack-entries
	// (128), so that they stay listpack-encoded.
	DefaultShardBits = 20
	// MaxShardBits keeps a shard within the first 4 bytes of a digest.
	MaxShardBits = 24
	// maxHashValue is Redis' default hash-max-listpack-value: a longer
	// value would turn its whole hash into a hashtable.
	maxHashValue  = 64
	layoutCompact = 2
)

func (l Layout) withDefaults() (Layout, error) {
	if l.ShardBits == 0 {
		l.ShardBits = DefaultShardBits
	}
	if l.ShardBits < 1 || l.ShardBits > MaxShardBits {
		return l, fmt.Errorf("dedup: shard bits %d out of range 1..%d", l.ShardBits, MaxShardBits)
	}
	if l.Logger == nil {
		l.Logger = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// marker is the layout record a store keeps (Redis: PREFIX dedup:layout;
// bbolt: the key "\x00layout" of the bucket dedup2), written by the first
// save of a proxy that knows layout 2, so that a fleet agrees on it.
// Migrated says that no entry is left in the old layout: lookups then ask
// the compact layout only.
type marker struct {
	Layout    int  `json:"layout"`
	ShardBits int  `json:"shard_bits,omitempty"`
	Migrated  bool `json:"migrated,omitempty"`
}

func parseMarker(v []byte) (marker, error) {
	var m marker
	if err := json.Unmarshal(v, &m); err != nil {
		return m, fmt.Errorf("dedup layout marker %q: %w", v, err)
	}
	if m.Layout != layoutCompact {
		return m, fmt.Errorf("dedup layout marker %q: layout %d is not one this release knows (2)", v, m.Layout)
	}
	if m.ShardBits < 0 || m.ShardBits > MaxShardBits {
		return m, fmt.Errorf("dedup layout marker %q: shard bits out of range 1..%d", v, MaxShardBits)
	}
	return m, nil
}

func (m marker) bytes() []byte {
	b, _ := json.Marshal(m)
	return b
}

// entryOf turns a packed entry back into an Entry.
func entryOf(p packed) *Entry {
	return &Entry{ID: p.ID, URL: p.URL, Date: p.Date}
}
