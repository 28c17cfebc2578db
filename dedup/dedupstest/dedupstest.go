// Package dedupstest holds the contract every dedup.Store backend passes
// (Run) and an in-memory Store for tests of code that uses dedup
// (MemStore).
package dedupstest

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/warcproxy/warcproxy/dedup"
)

// Opener prepares fresh, empty storage private to one test and returns a
// function that opens a Store on it. Run calls that function again after
// closing the previous Store and expects the same data, read through a new
// handle (a bbolt file opened anew, a new Redis client).
type Opener func(t *testing.T) (open func() (dedup.Store, error))

// Run runs the contract suite against the backend that newStorage opens.
func Run(t *testing.T, newStorage Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, open func() dedup.Store)
	}{
		{"NotFound", testNotFound},
		{"SaveThenLookup", testSaveThenLookup},
		{"BucketsIsolated", testBucketsIsolated},
		{"Replace", testReplace},
		{"OddCharacters", testOddCharacters},
		{"DigestForms", testDigestForms},
		{"OddEntries", testOddEntries},
		{"LookupURL", testLookupURL},
		{"AddOddDigestsAndEntries", testAddOddDigestsAndEntries},
		{"ThousandKeys", testThousandKeys},
		{"Concurrent", testConcurrent},
		{"Reopen", testReopen},
		{"AfterClose", testAfterClose},
		{"CanceledContext", testCanceledContext},
		{"AddKeepsExisting", testAddKeepsExisting},
		{"AddFirstWins", testAddFirstWins},
		{"AddOddKeys", testAddOddKeys},
		{"AddAfterClose", testAddAfterClose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			openStorage := newStorage(t)
			open := func() dedup.Store {
				t.Helper()
				s, err := openStorage()
				require.NoError(t, err)
				require.NotNil(t, s)
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			tc.fn(t, open)
		})
	}
}

// Entry returns a distinct, realistic entry for n.
func Entry(n int) dedup.Entry {
	return dedup.Entry{
		ID:   fmt.Sprintf("<urn:uuid:%08x-0000-4000-8000-%012x>", n, n),
		URL:  fmt.Sprintf("https://example.com/page/%d?q=a&b=<c>", n),
		Date: fmt.Sprintf("2024-03-%02dT12:34:56Z", 1+n%28),
	}
}

// Digest returns a distinct, realistic payload digest for n: sha1 in
// base32, as the proxy writes by default.
func Digest(n int) string {
	sum := sha1.Sum([]byte(strconv.Itoa(n)))
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// digestForms are one payload's digest in each form the proxy writes
// (sha1 and sha256, base32 and hex) and a few it never writes.
func digestForms(n int) []string {
	p := []byte(strconv.Itoa(n))
	s1, s256 := sha1.Sum(p), sha256.Sum256(p)
	return []string{
		"sha1:" + base32.StdEncoding.EncodeToString(s1[:]),
		"sha1:" + hex.EncodeToString(s1[:]),
		"sha256:" + base32.StdEncoding.EncodeToString(s256[:]),
		"sha256:" + hex.EncodeToString(s256[:]),
		"sha1:" + strings.ToUpper(hex.EncodeToString(s1[:])),                       // not as written: kept as text
		"sha1:" + strings.ToLower(base32.StdEncoding.EncodeToString(s1[:])),        // idem
		"sha512:" + base32.StdEncoding.EncodeToString(append(s256[:], s256[:]...)), // an unknown algorithm
		"sha1:" + base32.StdEncoding.EncodeToString(s1[:10]),                       // too short
	}
}

func lookup(t *testing.T, s dedup.Store, keys ...dedup.Key) []*dedup.Entry {
	t.Helper()
	got, err := s.Lookup(context.Background(), keys)
	require.NoError(t, err)
	require.Len(t, got, len(keys), "one result per key")
	return got
}

func save(t *testing.T, s dedup.Store, items ...dedup.Item) {
	t.Helper()
	require.NoError(t, s.Save(context.Background(), items))
}

func requireEntry(t *testing.T, want dedup.Entry, got *dedup.Entry, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, msgAndArgs...)
	if d := cmp.Diff(want, *got); d != "" {
		t.Fatalf("entry (-want +got):\n%s\n%v", d, fmt.Sprint(msgAndArgs...))
	}
}

func testNotFound(t *testing.T, open func() dedup.Store) {
	s := open()
	got := lookup(t, s, dedup.Key{Digest: Digest(1)}, dedup.Key{Digest: Digest(1), Bucket: "b"}, dedup.Key{})
	require.Equal(t, []*dedup.Entry{nil, nil, nil}, got)
	require.Empty(t, lookup(t, s), "no keys, no results")
	save(t, s) // no items: nothing to do
}

func testSaveThenLookup(t *testing.T, open func() dedup.Store) {
	s := open()
	k := dedup.Key{Digest: Digest(7), Bucket: "crawl"}
	save(t, s, dedup.Item{Key: k, Entry: Entry(7)})
	got := lookup(t, s, dedup.Key{Digest: Digest(6), Bucket: "crawl"}, k, dedup.Key{Digest: Digest(8), Bucket: "crawl"})
	require.Nil(t, got[0])
	requireEntry(t, Entry(7), got[1])
	require.Nil(t, got[2])

	got = lookup(t, s, k, k)
	requireEntry(t, Entry(7), got[0], "a key asked twice")
	requireEntry(t, Entry(7), got[1], "a key asked twice")
	got[0].URL = "changed by the caller"
	requireEntry(t, Entry(7), lookup(t, s, k)[0], "results are copies")
}

func testBucketsIsolated(t *testing.T, open func() dedup.Store) {
	s := open()
	d := Digest(1)
	save(t, s, dedup.Item{Key: dedup.Key{Digest: d, Bucket: "a"}, Entry: Entry(1)})
	got := lookup(t, s, dedup.Key{Digest: d, Bucket: "a"}, dedup.Key{Digest: d, Bucket: "b"}, dedup.Key{Digest: d}, dedup.Key{Digest: d, Bucket: "A"})
	requireEntry(t, Entry(1), got[0])
	require.Nil(t, got[1], "another bucket")
	require.Nil(t, got[2], "the default bucket")
	require.Nil(t, got[3], "bucket names are case-sensitive")

	save(t, s, dedup.Item{Key: dedup.Key{Digest: d, Bucket: "b"}, Entry: Entry(2)}, dedup.Item{Key: dedup.Key{Digest: d}, Entry: Entry(3)})
	got = lookup(t, s, dedup.Key{Digest: d, Bucket: "a"}, dedup.Key{Digest: d, Bucket: "b"}, dedup.Key{Digest: d})
	requireEntry(t, Entry(1), got[0])
	requireEntry(t, Entry(2), got[1])
	requireEntry(t, Entry(3), got[2])
}

func testReplace(t *testing.T, open func() dedup.Store) {
	s := open()
	k := dedup.Key{Digest: Digest(1), Bucket: "b"}
	other := dedup.Key{Digest: Digest(2), Bucket: "b"}
	save(t, s, dedup.Item{Key: k, Entry: Entry(1)}, dedup.Item{Key: other, Entry: Entry(9)})
	save(t, s, dedup.Item{Key: k, Entry: Entry(2)})
	got := lookup(t, s, k, other)
	requireEntry(t, Entry(2), got[0], "a later save replaces the earlier")
	requireEntry(t, Entry(9), got[1], "other keys untouched")

	save(t, s, dedup.Item{Key: k, Entry: Entry(3)}, dedup.Item{Key: other, Entry: Entry(4)}, dedup.Item{Key: k, Entry: Entry(5)})
	got = lookup(t, s, k, other)
	requireEntry(t, Entry(5), got[0], "the last item of a batch wins")
	requireEntry(t, Entry(4), got[1])
}

func testOddCharacters(t *testing.T, open func() dedup.Store) {
	s := open()
	keys := []dedup.Key{
		{Digest: Digest(1), Bucket: ""},
		{Digest: Digest(1), Bucket: "|"},
		{Digest: Digest(1), Bucket: "a|b"},
		{Digest: Digest(1), Bucket: "||"},
		{Digest: Digest(1), Bucket: "crawl:2024:job"},
		{Digest: Digest(1), Bucket: "with space "},
		{Digest: Digest(1), Bucket: " "},
		{Digest: Digest(1), Bucket: "ünïcødé 日本語 🦀"},
		{Digest: Digest(1), Bucket: "tab\tnew\nline\x00nul\xff"},
		{Digest: Digest(1), Bucket: "{slot}tag"},
		{Digest: Digest(1), Bucket: `"quoted"\`},
		{Digest: Digest(1), Bucket: "%7C"},
		{Digest: Digest(1), Bucket: strings.Repeat("long", 2000)},
		// Digests with the separator must not collide with buckets
		// holding it.
		{Digest: "a|b", Bucket: "c"},
		{Digest: "a", Bucket: "b|c"},
		{Digest: "a|b|c", Bucket: ""},
		{Digest: "a%7Cb", Bucket: "c"},
		{Digest: "a%b", Bucket: "c"},
		{Digest: "", Bucket: ""},
		{Digest: "", Bucket: "|"},
		{Digest: "sha256:ÄÖ 日本", Bucket: "x"},
		{Digest: "dedup:" + Digest(1), Bucket: ""},
	}
	odd := dedup.Entry{
		ID:   "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>",
		URL:  "http://ex.com/ünï/日本?q=\"x\"&y=<z>\\\x7f\xff\xfe\x01",
		Date: "2024-03-01T12:34:56.123456Z",
	}
	var items []dedup.Item
	for i, k := range keys {
		e := Entry(i)
		if i == 3 {
			e = odd
		}
		items = append(items, dedup.Item{Key: k, Entry: e})
	}
	save(t, s, items...)
	got := lookup(t, s, keys...)
	for i, k := range keys {
		requireEntry(t, items[i].Entry, got[i], fmt.Sprintf("key %q", k))
	}
	// One key at a time too, in case a backend mixes up batch positions.
	for i, k := range keys {
		requireEntry(t, items[i].Entry, lookup(t, s, k)[0], fmt.Sprintf("key %q alone", k))
	}
	got = lookup(t, s, dedup.Key{Digest: "a|b", Bucket: ""}, dedup.Key{Digest: "a", Bucket: "b"}, dedup.Key{Digest: Digest(1), Bucket: "a"})
	require.Equal(t, []*dedup.Entry{nil, nil, nil}, got)
}

// testDigestForms: each form of a digest finds its own entry; a base32
// and a hex digest of one payload may share one (the same payload), the
// rest never.
func testDigestForms(t *testing.T, open func() dedup.Store) {
	s := open()
	forms := digestForms(1)
	var items []dedup.Item
	for i, d := range forms {
		items = append(items, dedup.Item{Key: dedup.Key{Digest: d, Bucket: "b"}, Entry: Entry(i)})
	}
	save(t, s, items...)
	for i, d := range forms {
		got := lookup(t, s, dedup.Key{Digest: d, Bucket: "b"})[0]
		require.NotNil(t, got, d)
		if i < 4 {
			// sha1 base32 and hex are one payload; so are the sha256 two.
			require.Contains(t, []dedup.Entry{Entry(i), Entry(i ^ 1)}, *got, d)
		} else {
			requireEntry(t, Entry(i), got, d)
		}
		require.Nil(t, lookup(t, s, dedup.Key{Digest: d, Bucket: "c"})[0], d)
	}
	for _, d := range digestForms(2) {
		require.Nil(t, lookup(t, s, dedup.Key{Digest: d, Bucket: "b"})[0], d)
	}
}

// testOddEntries: entries whose parts do not pack (IDs other than a
// lowercase urn:uuid, dates not in the usual form, long values) come back
// exactly, found by the same URL and by another.
func testOddEntries(t *testing.T, open func() dedup.Store) {
	s := open()
	entries := []dedup.Entry{
		{ID: "<urn:uuid:3F0C5E54-9C55-4E3C-8D38-0E7C7A6A4B11>", URL: "http://ex.com/", Date: "2024-03-01T12:34:56Z"},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "2024-03-01T12:34:56.000Z"},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "2024-03-01T12:34:56.123456789Z"},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "2024-03-01T12:34:56+00:00"},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "1969-07-20T20:17:40Z"},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "", Date: ""},
		{ID: "", URL: "http://ex.com/", Date: "2024-03-01T12:34:56Z"},
		{ID: "<urn:x-tool:" + strings.Repeat("7", 80) + ">", URL: "http://ex.com/" + strings.Repeat("p", 300), Date: strings.Repeat("d", 70)},
		{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/\xff\x00", Date: "2024-02-30T12:34:56Z"},
	}
	var items []dedup.Item
	for i, e := range entries {
		items = append(items, dedup.Item{Key: dedup.Key{Digest: Digest(100 + i)}, Entry: e})
	}
	save(t, s, items...)
	for i, e := range entries {
		k := dedup.Key{Digest: Digest(100 + i)}
		requireEntry(t, e, lookup(t, s, k)[0], fmt.Sprintf("entry %d by another URL", i))
		k.URL = e.URL
		requireEntry(t, e, lookup(t, s, k)[0], fmt.Sprintf("entry %d by its URL", i))
	}
}

// testLookupURL: a hit answers with the original's URL whether the lookup
// is for that URL or another, in one batch.
func testLookupURL(t *testing.T, open func() dedup.Store) {
	s := open()
	save(t, s, dedup.Item{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(1)},
		dedup.Item{Key: dedup.Key{Digest: Digest(2)}, Entry: Entry(2)})
	got := lookup(t, s,
		dedup.Key{Digest: Digest(1), URL: Entry(1).URL},
		dedup.Key{Digest: Digest(1), URL: Entry(2).URL},
		dedup.Key{Digest: Digest(2), URL: "http://elsewhere.example/"},
		dedup.Key{Digest: Digest(3), URL: Entry(1).URL})
	requireEntry(t, Entry(1), got[0], "same URL")
	requireEntry(t, Entry(1), got[1], "another URL")
	requireEntry(t, Entry(2), got[2], "another URL")
	require.Nil(t, got[3])
}

// testAddOddDigestsAndEntries: with digests that keep the old layout and
// entries too big for a Redis hash too, Add stores only where no entry is, the first of
// a batch's items for a key, and says which it stored; what it stores is
// found like a saved entry, by its URL or another.
func testAddOddDigestsAndEntries(t *testing.T, open func() dedup.Store) {
	s := open()
	ctx := context.Background()
	odd := dedup.Entry{ID: "<urn:x-tool:" + strings.Repeat("7", 70) + ">", URL: "http://ex.com/odd", Date: "2024-03-01"}
	save(t, s, dedup.Item{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(1)},
		dedup.Item{Key: dedup.Key{Digest: "sha1:ODD"}, Entry: Entry(1)})
	items := []dedup.Item{
		{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(2)},
		{Key: dedup.Key{Digest: Digest(2)}, Entry: Entry(3)},
		{Key: dedup.Key{Digest: Digest(2)}, Entry: Entry(4)},
		{Key: dedup.Key{Digest: Digest(1), Bucket: "b"}, Entry: Entry(5)},
		{Key: dedup.Key{Digest: "sha1:ODD"}, Entry: Entry(6)},
		{Key: dedup.Key{Digest: "sha1:ODD", Bucket: "b"}, Entry: Entry(7)},
		{Key: dedup.Key{Digest: Digest(3)}, Entry: odd},
	}
	added, err := s.Add(ctx, items)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, true, false, true, true}, added)
	got := lookup(t, s, dedup.Key{Digest: Digest(1)}, dedup.Key{Digest: Digest(2), URL: Entry(3).URL},
		dedup.Key{Digest: Digest(1), Bucket: "b"}, dedup.Key{Digest: "sha1:ODD"}, dedup.Key{Digest: "sha1:ODD", Bucket: "b"},
		dedup.Key{Digest: Digest(3)})
	requireEntry(t, Entry(1), got[0], "not replaced")
	requireEntry(t, Entry(3), got[1], "the first of the batch")
	requireEntry(t, Entry(5), got[2])
	requireEntry(t, Entry(1), got[3], "not replaced")
	requireEntry(t, Entry(7), got[4])
	requireEntry(t, odd, got[5])

	added, err = s.Add(ctx, items)
	require.NoError(t, err)
	require.Equal(t, make([]bool, len(items)), added, "run twice: nothing added")
	added, err = s.Add(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, added)
}

func testThousandKeys(t *testing.T, open func() dedup.Store) {
	s := open()
	const n = 1000
	items := make([]dedup.Item, n)
	for i := range items {
		items[i] = dedup.Item{Key: dedup.Key{Digest: Digest(i), Bucket: fmt.Sprint("b", i%3)}, Entry: Entry(i)}
	}
	save(t, s, items...)

	// 1000 keys, every other one saved: answers keep their positions.
	keys := make([]dedup.Key, n)
	for i := range keys {
		if i%2 == 0 {
			keys[i] = items[i].Key
		} else {
			keys[i] = dedup.Key{Digest: Digest(n + i), Bucket: items[i].Key.Bucket}
		}
	}
	got := lookup(t, s, keys...)
	for i := range keys {
		if i%2 == 0 {
			requireEntry(t, Entry(i), got[i], fmt.Sprint("key ", i))
		} else {
			require.Nil(t, got[i], "key %d", i)
		}
	}
}

func testConcurrent(t *testing.T, open func() dedup.Store) {
	s := open()
	const workers, per = 16, 40
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error {
			ctx := context.Background()
			for i := range per {
				n := w*per + i
				k := dedup.Key{Digest: Digest(n), Bucket: "c"}
				if err := s.Save(ctx, []dedup.Item{{Key: k, Entry: Entry(n)}}); err != nil {
					return err
				}
				// Own key: must be there. A neighbour's: there or not,
				// but never wrong.
				nb := ((w+1)%workers)*per + i
				got, err := s.Lookup(ctx, []dedup.Key{k, {Digest: Digest(nb), Bucket: "c"}})
				if err != nil {
					return err
				}
				if got[0] == nil || *got[0] != Entry(n) {
					return fmt.Errorf("worker %d: own key %d: got %v", w, n, got[0])
				}
				if got[1] != nil && *got[1] != Entry(nb) {
					return fmt.Errorf("worker %d: neighbour key %d: got %v", w, nb, *got[1])
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	keys := make([]dedup.Key, workers*per)
	for n := range keys {
		keys[n] = dedup.Key{Digest: Digest(n), Bucket: "c"}
	}
	for n, e := range lookup(t, s, keys...) {
		requireEntry(t, Entry(n), e)
	}
}

func testReopen(t *testing.T, open func() dedup.Store) {
	s := open()
	k := dedup.Key{Digest: Digest(1), Bucket: "b"}
	save(t, s, dedup.Item{Key: k, Entry: Entry(1)}, dedup.Item{Key: dedup.Key{Digest: Digest(2)}, Entry: Entry(2)})
	require.NoError(t, s.Close())

	s2 := open()
	got := lookup(t, s2, k, dedup.Key{Digest: Digest(2)}, dedup.Key{Digest: Digest(3)})
	requireEntry(t, Entry(1), got[0], "saved before the reopen")
	requireEntry(t, Entry(2), got[1], "saved before the reopen")
	require.Nil(t, got[2])
	save(t, s2, dedup.Item{Key: k, Entry: Entry(5)})
	require.NoError(t, s2.Close())

	requireEntry(t, Entry(5), lookup(t, open(), k)[0], "replaced after the reopen")
}

func testAfterClose(t *testing.T, open func() dedup.Store) {
	s := open()
	save(t, s, dedup.Item{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(1)})
	require.NoError(t, s.Close())
	_, err := s.Lookup(context.Background(), []dedup.Key{{Digest: Digest(1)}})
	require.ErrorIs(t, err, dedup.ErrClosed)
	err = s.Save(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: Digest(2)}, Entry: Entry(2)}})
	require.ErrorIs(t, err, dedup.ErrClosed)
	require.NoError(t, s.Close(), "a second Close does nothing")
}

func testCanceledContext(t *testing.T, open func() dedup.Store) {
	s := open()
	k := dedup.Key{Digest: Digest(1)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Save(ctx, []dedup.Item{{Key: k, Entry: Entry(1)}})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Lookup(ctx, []dedup.Key{k})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, lookup(t, s, k)[0], "a canceled save stores nothing")
	save(t, s, dedup.Item{Key: k, Entry: Entry(1)})
	requireEntry(t, Entry(1), lookup(t, s, k)[0], "the store still works")
}

func add(t *testing.T, s dedup.Store, items ...dedup.Item) []bool {
	t.Helper()
	added, err := s.Add(context.Background(), items)
	require.NoError(t, err)
	require.Len(t, added, len(items), "one answer per item")
	return added
}

func testAddKeepsExisting(t *testing.T, open func() dedup.Store) {
	s := open()
	saved := dedup.Key{Digest: Digest(1), Bucket: "b"}
	save(t, s, dedup.Item{Key: saved, Entry: Entry(1)})
	fresh := dedup.Key{Digest: Digest(2), Bucket: "b"}
	otherBucket := dedup.Key{Digest: Digest(1), Bucket: "c"}
	got := add(t, s,
		dedup.Item{Key: saved, Entry: Entry(10)},
		dedup.Item{Key: fresh, Entry: Entry(2)},
		dedup.Item{Key: otherBucket, Entry: Entry(3)})
	require.Equal(t, []bool{false, true, true}, got)
	e := lookup(t, s, saved, fresh, otherBucket)
	requireEntry(t, Entry(1), e[0], "an add never replaces a saved entry")
	requireEntry(t, Entry(2), e[1])
	requireEntry(t, Entry(3), e[2])

	require.Equal(t, []bool{false, false}, add(t, s,
		dedup.Item{Key: fresh, Entry: Entry(20)}, dedup.Item{Key: otherBucket, Entry: Entry(30)}),
		"the same items again: nothing added")
	requireEntry(t, Entry(2), lookup(t, s, fresh)[0], "nor an added one")

	save(t, s, dedup.Item{Key: fresh, Entry: Entry(4)})
	requireEntry(t, Entry(4), lookup(t, s, fresh)[0], "a save still replaces an added entry")
	require.Empty(t, add(t, s), "no items, no answers")
}

func testAddFirstWins(t *testing.T, open func() dedup.Store) {
	s := open()
	// Keys in an order that is not their sort order, each given twice.
	var items []dedup.Item
	for _, n := range []int{9, 3, 7, 3, 9, 1} {
		items = append(items, dedup.Item{Key: dedup.Key{Digest: Digest(n), Bucket: "b"}, Entry: Entry(n + 100*len(items))})
	}
	got := add(t, s, items...)
	require.Equal(t, []bool{true, true, true, false, false, true}, got)
	e := lookup(t, s, items[0].Key, items[1].Key, items[2].Key, items[5].Key)
	requireEntry(t, items[0].Entry, e[0], "the first item of a key wins")
	requireEntry(t, items[1].Entry, e[1], "the first item of a key wins")
	requireEntry(t, items[2].Entry, e[2])
	requireEntry(t, items[5].Entry, e[3])
}

func testAddOddKeys(t *testing.T, open func() dedup.Store) {
	s := open()
	keys := []dedup.Key{
		{Digest: "a|b", Bucket: "c"},
		{Digest: "a", Bucket: "b|c"},
		{Digest: Digest(1), Bucket: "ünïcødé 日本語 🦀"},
		{Digest: Digest(1), Bucket: ""},
		{Digest: Digest(1), Bucket: "__unspecified__"},
	}
	var items []dedup.Item
	for i, k := range keys {
		items = append(items, dedup.Item{Key: k, Entry: Entry(i)})
	}
	require.Equal(t, []bool{true, true, true, true, true}, add(t, s, items...))
	for i, e := range lookup(t, s, keys...) {
		requireEntry(t, Entry(i), e, fmt.Sprintf("key %q", keys[i]))
	}
	require.Equal(t, []bool{false, false, false, false, false}, add(t, s, items...))
}

func testAddAfterClose(t *testing.T, open func() dedup.Store) {
	s := open()
	require.NoError(t, s.Close())
	_, err := s.Add(context.Background(), []dedup.Item{{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(1)}})
	require.ErrorIs(t, err, dedup.ErrClosed)

	s = open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Add(ctx, []dedup.Item{{Key: dedup.Key{Digest: Digest(1)}, Entry: Entry(1)}})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, lookup(t, s, dedup.Key{Digest: Digest(1)})[0], "a canceled add stores nothing")
}

// MemStore is an in-memory dedup.Store for tests. Its zero value is ready
// to use; it passes Run.
type MemStore struct {
	mu      sync.Mutex
	m       map[dedup.Key]dedup.Entry
	closed  bool
	lookups int
	saves   int
}

var _ dedup.Store = (*MemStore)(nil)

// Lookup implements dedup.Store.
func (s *MemStore) Lookup(ctx context.Context, keys []dedup.Key) ([]*dedup.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, dedup.ErrClosed
	}
	s.lookups++
	out := make([]*dedup.Entry, len(keys))
	for i, k := range keys {
		if e, ok := s.m[dedup.Key{Digest: k.Digest, Bucket: k.Bucket}]; ok {
			out[i] = &e
		}
	}
	return out, nil
}

// Save implements dedup.Store.
func (s *MemStore) Save(ctx context.Context, items []dedup.Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return dedup.ErrClosed
	}
	s.saves++
	if s.m == nil {
		s.m = make(map[dedup.Key]dedup.Entry)
	}
	for _, it := range items {
		s.m[dedup.Key{Digest: it.Key.Digest, Bucket: it.Key.Bucket}] = it.Entry
	}
	return nil
}

// Add implements dedup.Store.
func (s *MemStore) Add(ctx context.Context, items []dedup.Item) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, dedup.ErrClosed
	}
	s.saves++
	if s.m == nil {
		s.m = make(map[dedup.Key]dedup.Entry)
	}
	added := make([]bool, len(items))
	for i, it := range items {
		k := dedup.Key{Digest: it.Key.Digest, Bucket: it.Key.Bucket}
		if _, ok := s.m[k]; !ok {
			s.m[k] = it.Entry
			added[i] = true
		}
	}
	return added, nil
}

// Close implements dedup.Store.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Reopen makes a closed MemStore usable again, with its data, as if the
// backend had been opened anew.
func (s *MemStore) Reopen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = false
}

// Closed reports whether Close was called (and not followed by Reopen).
func (s *MemStore) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Len is the number of entries stored.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Calls reports how many Lookup and Save calls reached the store.
func (s *MemStore) Calls() (lookups, saves int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups, s.saves
}
