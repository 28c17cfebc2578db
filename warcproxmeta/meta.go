// Package warcproxmeta parses the Warcprox-Meta request header that crawlers
// use to steer warcprox per request, with the semantics of Internet Archive's
// warcprox (api.rst, warcproxy.py, stats.py, dedup.py).
package warcproxmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// HeaderName is the request (and response) header this package deals with.
const HeaderName = "Warcprox-Meta"

// UnspecifiedBucket is the stats and dedup bucket used when a request names none.
const UnspecifiedBucket = "__unspecified__"

// DoNotArchivePrefix as warc-prefix means: fetch, but write no records.
const DoNotArchivePrefix = "-"

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid Warcprox-Meta header")

// Error says which field of the header is wrong and why. Its text is meant
// to be the body of a 400 response.
type Error struct {
	Field  string // top-level key, "" when the header as a whole is wrong
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "invalid Warcprox-Meta header: " + e.Reason
	}
	return fmt.Sprintf("invalid Warcprox-Meta header: field %q: %s", e.Field, e.Reason)
}

func (e *Error) Unwrap() error { return ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// DedupBucket is one dedup bucket. Lookups go through the buckets in order
// (first hit wins); saves go to every bucket that is not ReadOnly.
type DedupBucket struct {
	Name     string
	ReadOnly bool // mode "ro"; any other mode string (warcprox's tests use "") is read-write
}

// Bucket is one stats bucket, optionally tallied per domain too.
type Bucket struct {
	Name         string
	TallyDomains []string // as given; the stats stage normalises them
}

// Limit is one entry of "limits" or "soft-limits".
type Limit struct {
	Key      string // as given, e.g. "job1:foo.com/total/urls"
	Bucket   string // the part before the last two slashes, e.g. "job1:foo.com"
	Category string // "total", "new" or "revisit"
	Stat     string // "urls" or "wire_bytes"
	Value    int64  // 0 is never reached (warcprox only enforces values > 0)
}

// Domain splits a domain-scoped bucket ("job1:foo.com") the way warcprox does:
// only when the bucket holds exactly one colon.
func (l Limit) Domain() (bucket, domain string, ok bool) {
	if strings.Count(l.Bucket, ":") != 1 {
		return l.Bucket, "", false
	}
	b, d, _ := strings.Cut(l.Bucket, ":")
	return b, d, true
}

// MimeTypeFilter is one entry of "mime-type-filters". warcprox applies Regex
// with Python's re.match (anchored at the start only) to the Content-Type;
// types other than REJECT and LIMIT are ignored by warcprox.
type MimeTypeFilter struct {
	Type  string `json:"type"`
	Regex string `json:"regex"`
}

// Meta is a parsed Warcprox-Meta request header.
type Meta struct {
	// WarcPrefix is nil when the header has no warc-prefix.
	WarcPrefix *string
	// DedupBuckets in order of appearance; nil when none given (then the
	// dedup stage uses __unspecified__). The legacy "dedup-bucket" and
	// "captures-bucket" forms replace the whole list, as in warcprox.
	DedupBuckets []DedupBucket
	// StatsBucketList holds stats.buckets; see StatsBuckets.
	StatsBucketList  []Bucket
	HasStatsBuckets  bool
	Limits           []Limit
	SoftLimits       []Limit
	Blocks           []*Rule // from "blocks", or decoded from "compressed_blocks" (which wins)
	Accept           []string
	MimeTypeFilters  []MimeTypeFilter
	Metadata         json.RawMessage // a JSON object, or nil
	Extra            map[string]json.RawMessage
	hasMimeFilters   bool
	hasAccept        bool
	hasLimits        bool
	hasSoftLimits    bool
	legacyKey        string // "dedup-bucket" or "captures-bucket" when one was given
	compressedBlocks bool
}

// DoNotArchive reports whether the capture must not be written (warc-prefix "-").
func (m *Meta) DoNotArchive() bool {
	return m.WarcPrefix != nil && *m.WarcPrefix == DoNotArchivePrefix
}

// Accepts reports whether the client asked for s in "accept" (e.g. "capture-metadata").
func (m *Meta) Accepts(s string) bool {
	for _, a := range m.Accept {
		if a == s {
			return true
		}
	}
	return false
}

// StatsBuckets returns the stats buckets the request names, or
// __unspecified__ when it names none (no "stats" or no "stats.buckets"). An
// explicitly empty list yields no buckets, as in warcprox. The __all__ bucket
// is not included: the stats stage always counts it.
func (m *Meta) StatsBuckets() []Bucket {
	if !m.HasStatsBuckets {
		return []Bucket{{Name: UnspecifiedBucket}}
	}
	return m.StatsBucketList
}

// Blocked returns the first block rule that applies to url, as the map that
// warcprox echoes in "blocked-by-rule" (use Rule.Raw for the exact bytes).
func (m *Meta) Blocked(url string) (rule map[string]any, ok bool) {
	r := m.BlockingRule(url)
	if r == nil {
		return nil, false
	}
	return r.Fields, true
}

// BlockingRule is Blocked returning the whole rule.
func (m *Meta) BlockingRule(url string) *Rule {
	if len(m.Blocks) == 0 {
		return nil
	}
	u := Canonicalize(url)
	for _, r := range m.Blocks {
		if r.applies(u) {
			return r
		}
	}
	return nil
}

// Parse parses a Warcprox-Meta header value, compiling its regexes anew;
// a proxy parses with a Parser it keeps, which compiles each pattern once.
func Parse(header string) (*Meta, error) { return new(Parser).Parse(header) }

// Parse parses a Warcprox-Meta header value.
func (p *Parser) Parse(header string) (*Meta, error) {
	dec := json.NewDecoder(strings.NewReader(header))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, &Error{Reason: "not valid JSON: " + err.Error()}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, &Error{Reason: "not a JSON object"}
	}
	m := &Meta{}
	var compressed string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &Error{Reason: "not valid JSON: " + err.Error()}
		}
		key := tok.(string) // object keys are always strings
		switch key {
		case "dedup-buckets":
			err = m.parseDedupBuckets(dec)
		case "limits":
			m.Limits, err = parseLimits(dec, key)
			m.hasLimits = true
		case "soft-limits":
			m.SoftLimits, err = parseLimits(dec, key)
			m.hasSoftLimits = true
		default:
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, &Error{Field: key, Reason: "not valid JSON: " + err.Error()}
			}
			if key == "compressed_blocks" {
				if err := json.Unmarshal(raw, &compressed); err != nil {
					return nil, fieldErr(key, "must be a string (base64 of zlib-compressed JSON list)")
				}
				m.compressedBlocks = true
				continue
			}
			err = m.parseRaw(p, key, raw)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, err
			}
			return nil, &Error{Field: key, Reason: err.Error()}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, &Error{Reason: "not valid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Reason: "not valid JSON: data after the object"}
	}
	if m.compressedBlocks {
		rules, err := p.decompressBlocks(compressed)
		if err != nil {
			return nil, err
		}
		m.Blocks = rules
	}
	return m, nil
}

func (m *Meta) parseRaw(p *Parser, key string, raw json.RawMessage) error {
	if isNull(raw) {
		switch key {
		case "warc-prefix", "dedup-bucket", "captures-bucket", "stats", "blocks", "accept", "mime-type-filters", "metadata":
			return fieldErr(key, "must not be null")
		}
	}
	switch key {
	case "warc-prefix":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fieldErr(key, "must be a string")
		}
		if strings.ContainsAny(s, `/\`) {
			return fieldErr(key, "slash and backslash are not permitted in warc-prefix")
		}
		m.WarcPrefix = &s
	case "dedup-bucket", "captures-bucket":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fieldErr(key, "must be a string")
		}
		m.setLegacyDedup(key, s)
	case "stats":
		return m.parseStats(raw)
	case "blocks":
		if m.compressedBlocks {
			return nil // compressed_blocks wins, wherever it appears
		}
		rules, err := p.parseRules(key, raw)
		if err != nil {
			return err
		}
		m.Blocks = rules
	case "accept":
		var a []string
		if err := json.Unmarshal(raw, &a); err != nil {
			return fieldErr(key, "must be a list of strings")
		}
		m.Accept, m.hasAccept = a, true
	case "mime-type-filters":
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fieldErr(key, "must be a list of objects")
		}
		m.MimeTypeFilters, m.hasMimeFilters = make([]MimeTypeFilter, 0, len(list)), true
		for i, f := range list {
			var mf MimeTypeFilter
			for _, k := range []string{"type", "regex"} {
				v, ok := f[k]
				if !ok {
					return fieldErr(key, "entry %d: missing %q", i, k)
				}
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					return fieldErr(key, "entry %d: %q must be a string", i, k)
				}
				if k == "type" {
					mf.Type = s
				} else {
					mf.Regex = s
				}
			}
			m.MimeTypeFilters = append(m.MimeTypeFilters, mf)
		}
	case "metadata":
		if firstByte(raw) != '{' {
			return fieldErr(key, "must be a JSON object")
		}
		m.Metadata = raw
	default:
		if m.Extra == nil {
			m.Extra = make(map[string]json.RawMessage)
		}
		m.Extra[key] = raw
	}
	return nil
}

// setLegacyDedup mirrors warcprox's RecordedUrl: "captures-bucket" and then
// "dedup-bucket" each replace dedup-buckets with {name: "rw"}, whatever the
// order in the header, so dedup-bucket wins over both.
func (m *Meta) setLegacyDedup(key, name string) {
	if key == "captures-bucket" && m.legacyKey == "dedup-bucket" {
		return
	}
	m.DedupBuckets = []DedupBucket{{Name: name}}
	m.legacyKey = key
}
