// Package dedup remembers which payloads are already archived, so that a
// capture whose payload digest was written before becomes a revisit record
// pointing at the original instead of a second full copy.
//
// As in warcprox, an entry is keyed by payload digest ("sha1:BASE32...") and
// dedup bucket, and holds the original response record's WARC-Record-ID,
// WARC-Target-URI and WARC-Date. A Store keeps entries in a backend chosen
// by a store.Spec (an embedded bbolt file or Redis); an Index in front of
// it batches concurrent lookups, buffers saves and counts both.
//
// The proxy owns the policy (which buckets a capture uses, which are
// read-only, minimum sizes): it asks Index.Lookup before writing and calls
// Index.Save once the original record is on disk.
package dedup

import (
	"context"
	"errors"
	"strings"

	"github.com/warcproxy/warcproxy/internal/store"
)

// Entry locates the original capture of a payload: its response record's
// WARC-Record-ID (with the angle brackets), WARC-Target-URI and WARC-Date,
// as written. It is stored as warcprox stores it:
// {"id":"<urn:uuid:...>","url":"...","date":"..."}.
type Entry struct {
	ID   string `json:"id"`
	URL  string `json:"url"`
	Date string `json:"date"`
	// URLUnknown marks a hit whose original was captured at another URL
	// than the one looked up, in a store that does not know that URL (a
	// Redis index without its URL table): URL is empty, and a revisit
	// cannot name its WARC-Refers-To-Target-URI, so the Index counts it
	// as a miss (result "url_unknown").
	URLUnknown bool `json:"-"`
}

// Key names one entry: a payload digest as written in WARC-Payload-Digest
// ("sha1:BASE32...") and a dedup bucket ("" is warcprox's default bucket).
//
// URL is the URL of the capture being looked up, not part of the entry's
// name (saves ignore it): a store that keeps only a hash of the original's
// URL answers a hit whose hash matches with this URL, and needs the full
// URL from elsewhere only for a hit of another URL (see URLUnknown).
type Key struct {
	Digest string
	Bucket string
	URL    string
}

// name is the key without its URL: what identifies an entry.
func (k Key) name() Key { return Key{Digest: k.Digest, Bucket: k.Bucket} }

// Item is an entry to save under its key.
type Item struct {
	Key   Key
	Entry Entry
}

// Store is a dedup backend. Implementations are safe for concurrent use.
type Store interface {
	// Lookup returns one *Entry per key, in order; nil means not found.
	// A hit's URL is the original's, which is the key's URL when the
	// two hash alike (see Key).
	Lookup(ctx context.Context, keys []Key) ([]*Entry, error)
	// Save stores the items; a later save of a key replaces the earlier
	// one (within one call too: the last item for a key wins).
	Save(ctx context.Context, items []Item) error
	// Add stores each item only where its key has no entry yet, and says
	// which it stored: an import of old captures never replaces what a
	// crawl (or an earlier import) saved. Within one call the first item
	// for a key wins. A value that is there but does not parse counts as
	// an entry, and so does one in the old layout until the index is
	// migrated.
	Add(ctx context.Context, items []Item) (added []bool, err error)
	// Close releases the backend. Lookup and Save then fail with
	// ErrClosed; a second Close does nothing.
	Close() error
}

// ErrClosed is returned by a Store or Index used after Close.
var ErrClosed = errors.New("dedup: closed")

// Open opens the Store a spec names (store.Open: the same errors as
// stats.Open), taking its database handle from h (nil: one of its own).
// For store.None it returns (nil, nil): dedup is off.
func Open(spec store.Spec, h *store.Handles) (Store, error) {
	return OpenLayout(spec, h, Layout{})
}

// OpenLayout is Open with the compact layout tuned by l.
func OpenLayout(spec store.Spec, h *store.Handles, l Layout) (Store, error) {
	l, err := l.withDefaults()
	if err != nil {
		return nil, err
	}
	return store.Open(spec, h, backends{layout: l})
}

// backends makes a Store in each kind of backend: embedded.go, redis.go.
type backends struct{ layout Layout }

var _ store.Backends[Store] = backends{}

// storageKey is the key of an entry in a backend: digest + "|" + bucket, as
// warcprox builds it. Digests never contain "|" or "%" in practice, and are
// then used as they are; otherwise those two characters of the digest are
// percent-escaped, so that the first "|" always ends the digest and no two
// keys share a storage key (the bucket may contain anything).
func storageKey(k Key) string {
	d := k.Digest
	if strings.ContainsAny(d, "%|") {
		d = strings.NewReplacer("%", "%25", "|", "%7C").Replace(d)
	}
	return d + "|" + k.Bucket
}
