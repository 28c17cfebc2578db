package warcproxmeta

import (
	"bytes"
	"encoding/json"
	"sort"
)

// MarshalJSON writes the normalised header: legacy dedup forms as
// dedup-buckets, compressed_blocks as blocks, key order kept where it matters.
func (m *Meta) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	put := func(key string, v any) error {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		if raw, ok := v.([]byte); ok {
			b.Write(raw)
			return nil
		}
		enc, err := json.Marshal(v)
		b.Write(enc)
		return err
	}
	var err error
	add := func(key string, v any) {
		if err == nil {
			err = put(key, v)
		}
	}
	if m.WarcPrefix != nil {
		add("warc-prefix", *m.WarcPrefix)
	}
	if m.DedupBuckets != nil {
		var d bytes.Buffer
		d.WriteByte('{')
		for i, bk := range m.DedupBuckets {
			if i > 0 {
				d.WriteByte(',')
			}
			k, _ := json.Marshal(bk.Name)
			d.Write(k)
			if bk.ReadOnly {
				d.WriteString(`:"ro"`)
			} else {
				d.WriteString(`:"rw"`)
			}
		}
		d.WriteByte('}')
		add("dedup-buckets", d.Bytes())
	}
	if m.HasStatsBuckets {
		list := make([]any, 0, len(m.StatsBucketList))
		for _, bk := range m.StatsBucketList {
			if bk.TallyDomains == nil {
				list = append(list, bk.Name)
			} else {
				list = append(list, map[string]any{"bucket": bk.Name, "tally-domains": bk.TallyDomains})
			}
		}
		add("stats", map[string]any{"buckets": list})
	}
	limits := func(key string, ls []Limit) {
		var d bytes.Buffer
		d.WriteByte('{')
		for i, l := range ls {
			if i > 0 {
				d.WriteByte(',')
			}
			k, _ := json.Marshal(l.Key)
			d.Write(k)
			d.WriteByte(':')
			v, _ := json.Marshal(l.Value)
			d.Write(v)
		}
		d.WriteByte('}')
		add(key, d.Bytes())
	}
	if m.hasLimits {
		limits("limits", m.Limits)
	}
	if m.hasSoftLimits {
		limits("soft-limits", m.SoftLimits)
	}
	if m.Blocks != nil {
		var d bytes.Buffer
		d.WriteByte('[')
		for i, r := range m.Blocks {
			if i > 0 {
				d.WriteByte(',')
			}
			d.Write(r.Raw)
		}
		d.WriteByte(']')
		add("blocks", d.Bytes())
	}
	if m.hasAccept {
		add("accept", nonNil(m.Accept))
	}
	if m.hasMimeFilters {
		add("mime-type-filters", nonNil(m.MimeTypeFilters))
	}
	if m.Metadata != nil {
		add("metadata", []byte(m.Metadata))
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(k, []byte(m.Extra[k]))
	}
	b.WriteByte('}')
	return b.Bytes(), err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
