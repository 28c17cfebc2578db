// Package stats tallies captures into buckets, as warcprox's stats
// processor does, so that crawlers can read them back and so that the
// proxy can enforce Warcprox-Meta "limits" and "soft-limits".
//
// Every capture counts in "__all__", in the buckets its Warcprox-Meta
// header names (or "__unspecified__" when it names none), and, for a bucket
// with "tally-domains", in "bucket:domain" for each listed domain the URL's
// host is or is a subdomain of. A bucket holds three pairs of counters:
// total (every capture), new (written as a response) and revisit (written
// as a revisit).
//
// A Tracker keeps each bucket's value in memory as the last value read from
// a Store plus the increments not yet stored, so a limit holds exactly at
// capture time, and persists the increments in batches. Stores are chosen
// by a store.Spec: embedded (a bbolt file) or Redis, which several proxies
// may share.
package stats

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Well-known bucket names.
const (
	// AllBucket counts every capture.
	AllBucket = "__all__"
	// UnspecifiedBucket counts captures whose Warcprox-Meta names no
	// stats buckets.
	UnspecifiedBucket = "__unspecified__"
)

// Categories and stats of a bucket, as limit keys name them
// ("job1/new/wire_bytes").
const (
	CategoryTotal   = "total"
	CategoryNew     = "new"
	CategoryRevisit = "revisit"
	StatURLs        = "urls"
	StatWireBytes   = "wire_bytes"
)

// Counts is one pair of counters of a bucket.
type Counts struct {
	URLs      int64 `json:"urls"`
	WireBytes int64 `json:"wire_bytes"`
}

func (c *Counts) add(d Counts) {
	c.URLs += d.URLs
	c.WireBytes += d.WireBytes
}

func (c *Counts) sub(d Counts) {
	c.URLs -= d.URLs
	c.WireBytes -= d.WireBytes
}

// Bucket is the value of one stats bucket.
type Bucket struct {
	Total   Counts // every capture
	New     Counts // captures written as a response record
	Revisit Counts // captures written as a revisit record
}

// IsZero reports whether every counter is zero.
func (b Bucket) IsZero() bool { return b == Bucket{} }

// Add returns the sum of b and d.
func (b Bucket) Add(d Bucket) Bucket {
	b.add(d)
	return b
}

func (b *Bucket) add(d Bucket) {
	b.Total.add(d.Total)
	b.New.add(d.New)
	b.Revisit.add(d.Revisit)
}

func (b *Bucket) sub(d Bucket) {
	b.Total.sub(d.Total)
	b.New.sub(d.New)
	b.Revisit.sub(d.Revisit)
}

// Value returns one counter, named as in a limit key: category "total",
// "new" or "revisit" and stat "urls" or "wire_bytes". ok is false for any
// other name.
func (b Bucket) Value(category, stat string) (v int64, ok bool) {
	var c Counts
	switch category {
	case CategoryTotal:
		c = b.Total
	case CategoryNew:
		c = b.New
	case CategoryRevisit:
		c = b.Revisit
	default:
		return 0, false
	}
	switch stat {
	case StatURLs:
		return c.URLs, true
	case StatWireBytes:
		return c.WireBytes, true
	}
	return 0, false
}

// Doc is a bucket as warcprox's JSON document:
//
//	{"bucket":"job1","total":{"urls":3,"wire_bytes":1200},"new":{...},"revisit":{...}}
//
// the value warcprox stores per bucket and echoes in a Warcprox-Meta
// response header when a limit is reached.
type Doc struct {
	Bucket  string `json:"bucket"`
	Total   Counts `json:"total"`
	New     Counts `json:"new"`
	Revisit Counts `json:"revisit"`
}

// Doc returns the bucket's document under the given name.
func (b Bucket) Doc(name string) Doc {
	return Doc{Bucket: name, Total: b.Total, New: b.New, Revisit: b.Revisit}
}

// Value returns the counters of the document.
func (d Doc) Value() Bucket {
	return Bucket{Total: d.Total, New: d.New, Revisit: d.Revisit}
}

// MarshalJSON writes the document as Python's json.dumps(doc,
// separators=(",", ":")) does in warcprox: compact, keys in the order
// bucket, total, new, revisit, and everything outside printable ASCII
// escaped as \uXXXX, so that it can go into an HTTP header as it is.
func (d Doc) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128+len(d.Bucket))
	b = append(b, `{"bucket":`...)
	b = appendPyString(b, d.Bucket)
	for _, f := range [...]struct {
		key string
		c   Counts
	}{{`,"total":`, d.Total}, {`,"new":`, d.New}, {`,"revisit":`, d.Revisit}} {
		b = append(b, f.key...)
		b = append(b, `{"urls":`...)
		b = strconv.AppendInt(b, f.c.URLs, 10)
		b = append(b, `,"wire_bytes":`...)
		b = strconv.AppendInt(b, f.c.WireBytes, 10)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendPyString appends s as a JSON string the way Python's json module
// does with ensure_ascii: printable ASCII as is (but " and \), the usual
// short escapes, everything else as lowercase \uXXXX (UTF-16 surrogate
// pairs above U+FFFF). Invalid UTF-8 becomes U+FFFD.
func appendPyString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			if c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b = u(u(b, r1), r2)
		default:
			b = u(b, r)
		}
	}
	return append(b, '"')
}

// Outcome is how a capture was written, which decides the counters it
// adds to besides total.
type Outcome int

const (
	// New: written as a response (or resource) record.
	New Outcome = iota
	// Revisit: written as a revisit record.
	Revisit
	// NotWritten: not written at all (e.g. warc-prefix "-"): counts in
	// total only.
	NotWritten
)

func (o Outcome) String() string {
	switch o {
	case New:
		return "new"
	case Revisit:
		return "revisit"
	case NotWritten:
		return "not_written"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// delta is what one capture adds to each of its buckets.
func delta(o Outcome, wireBytes int64) Bucket {
	if wireBytes < 0 {
		wireBytes = 0
	}
	c := Counts{URLs: 1, WireBytes: wireBytes}
	d := Bucket{Total: c}
	switch o {
	case New:
		d.New = c
	case Revisit:
		d.Revisit = c
	}
	return d
}

// MaxNameLen bounds a bucket name in bytes. Longer names (and the empty
// name) are not tallied: bbolt cannot store them as keys, and no crawler
// needs them.
const MaxNameLen = 4096

func validName(name string) bool {
	return name != "" && len(name) <= MaxNameLen
}

// fieldName is a counter's field name in the Redis hash ("total:urls").
func fieldName(category, stat string) string {
	return category + ":" + stat
}

// fieldNames are the Redis hash fields of a bucket, in the order of fields.
func fieldNames() [6]string {
	return [6]string{
		fieldName(CategoryTotal, StatURLs), fieldName(CategoryTotal, StatWireBytes),
		fieldName(CategoryNew, StatURLs), fieldName(CategoryNew, StatWireBytes),
		fieldName(CategoryRevisit, StatURLs), fieldName(CategoryRevisit, StatWireBytes),
	}
}

// fields returns pointers to the counters of b in the order of fieldNames.
func (b *Bucket) fields() [6]*int64 {
	return [6]*int64{
		&b.Total.URLs, &b.Total.WireBytes,
		&b.New.URLs, &b.New.WireBytes,
		&b.Revisit.URLs, &b.Revisit.WireBytes,
	}
}
