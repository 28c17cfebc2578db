package warcproxmeta

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func firstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// openObject reads the '{' that starts field's value.
func openObject(dec *json.Decoder, field string) error {
	tok, err := dec.Token()
	if err != nil {
		return fieldErr(field, "not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fieldErr(field, "must be a JSON object")
	}
	return nil
}

// readScalar reads one value that must not be an object or a list.
func readScalar(dec *json.Decoder, field string) (json.Token, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fieldErr(field, "not valid JSON: %v", err)
	}
	if _, ok := tok.(json.Delim); ok {
		return nil, fieldErr(field, "values must not be objects or lists")
	}
	return tok, nil
}

// parseDedupBuckets reads {"name": "rw"|"ro", ...} keeping key order; a
// repeated name keeps its first place and its last mode, like a Python dict.
func (m *Meta) parseDedupBuckets(dec *json.Decoder) error {
	const field = "dedup-buckets"
	if err := openObject(dec, field); err != nil {
		return err
	}
	var list []DedupBucket
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fieldErr(field, "not valid JSON: %v", err)
		}
		name := tok.(string)
		tok, err = readScalar(dec, field)
		if err != nil {
			return err
		}
		mode, ok := tok.(string)
		if !ok {
			return fieldErr(field, "mode of bucket %q must be a string (\"rw\" or \"ro\")", name)
		}
		b := DedupBucket{Name: name, ReadOnly: mode == "ro"}
		if i, dup := index[name]; dup {
			list[i] = b
			continue
		}
		index[name] = len(list)
		list = append(list, b)
	}
	if _, err := dec.Token(); err != nil {
		return fieldErr(field, "not valid JSON: %v", err)
	}
	if list == nil {
		list = []DedupBucket{}
	}
	if m.legacyKey == "" { // the legacy forms win, wherever they appear
		m.DedupBuckets = list
	}
	return nil
}

var (
	limitCategories = map[string]bool{"total": true, "new": true, "revisit": true}
	limitStats      = map[string]bool{"urls": true, "wire_bytes": true}
)

// parseLimits reads {"bucket/total|new|revisit/urls|wire_bytes": N, ...} in order.
func parseLimits(dec *json.Decoder, field string) ([]Limit, error) {
	if err := openObject(dec, field); err != nil {
		return nil, err
	}
	list := []Limit{}
	index := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fieldErr(field, "not valid JSON: %v", err)
		}
		key := tok.(string)
		l, err := parseLimitKey(field, key)
		if err != nil {
			return nil, err
		}
		tok, err = readScalar(dec, field)
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fieldErr(field, "limit %q must be a number", key)
		}
		if l.Value, err = limitValue(num); err != nil {
			return nil, fieldErr(field, "limit %q: %v", key, err)
		}
		if i, dup := index[key]; dup {
			list[i] = l
			continue
		}
		index[key] = len(list)
		list = append(list, l)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fieldErr(field, "not valid JSON: %v", err)
	}
	return list, nil
}

// parseLimitKey splits like Python's key.rsplit("/", 2): the bucket may hold slashes.
func parseLimitKey(field, key string) (Limit, error) {
	i := strings.LastIndexByte(key, '/')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(key[:i], '/')
	}
	if j <= 0 {
		return Limit{}, fieldErr(field, "key %q must look like \"bucket/total|new|revisit/urls|wire_bytes\"", key)
	}
	l := Limit{Key: key, Bucket: key[:j], Category: key[j+1 : i], Stat: key[i+1:]}
	if !limitCategories[l.Category] {
		return Limit{}, fieldErr(field, "key %q: %q is not one of total, new, revisit", key, l.Category)
	}
	if !limitStats[l.Stat] {
		return Limit{}, fieldErr(field, "key %q: %q is not one of urls, wire_bytes", key, l.Stat)
	}
	return l, nil
}

func limitValue(num json.Number) (int64, error) {
	if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		if n < 0 {
			return 0, errNegative
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(f, 0) || f > 1<<62 {
		return 0, errTooLarge
	}
	if f < 0 {
		return 0, errNegative
	}
	if f != math.Trunc(f) {
		return 0, errNotInteger
	}
	return int64(f), nil
}

type reason string

func (r reason) Error() string { return string(r) }

const (
	errNegative   = reason("must not be negative")
	errNotInteger = reason("must be a whole number")
	errTooLarge   = reason("is too large")
)

func (m *Meta) parseStats(raw json.RawMessage) error {
	const field = "stats"
	var stats map[string]json.RawMessage
	if err := json.Unmarshal(raw, &stats); err != nil {
		return fieldErr(field, "must be a JSON object")
	}
	bucketsRaw, ok := stats["buckets"]
	if !ok {
		m.StatsBucketList, m.HasStatsBuckets = nil, false
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(bucketsRaw, &items); err != nil {
		return fieldErr(field, "buckets must be a list")
	}
	list := make([]Bucket, 0, len(items))
	for i, it := range items {
		switch firstByte(it) {
		case '"':
			var name string
			if err := json.Unmarshal(it, &name); err != nil {
				return fieldErr(field, "buckets[%d]: %v", i, err)
			}
			list = append(list, Bucket{Name: name})
		case '{':
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(it, &obj); err != nil {
				return fieldErr(field, "buckets[%d]: %v", i, err)
			}
			nameRaw, ok := obj["bucket"]
			if !ok {
				continue // warcprox logs and skips an object without "bucket"
			}
			var bk Bucket
			if err := json.Unmarshal(nameRaw, &bk.Name); err != nil || isNull(nameRaw) {
				return fieldErr(field, "buckets[%d]: \"bucket\" must be a string", i)
			}
			if td, ok := obj["tally-domains"]; ok && !isNull(td) {
				if err := json.Unmarshal(td, &bk.TallyDomains); err != nil {
					return fieldErr(field, "buckets[%d]: \"tally-domains\" must be a list of strings", i)
				}
			}
			list = append(list, bk)
		default:
			return fieldErr(field, "buckets[%d] must be a string or an object with \"bucket\"", i)
		}
	}
	m.StatsBucketList, m.HasStatsBuckets = list, true
	return nil
}
