package warcproxmeta

import (
	"bytes"
	"encoding/json"
	"sort"
)

// MarshalJSON writes the normalised header: legacy dedup forms as
// dedup-buckets, compressed_blocks as blocks, key order kept where it matters.
func (m *Meta) MarshalJSON() ([]byte, error) {
	var o jsonObject
	o.b.WriteByte('{')
	if m.WarcPrefix != nil {
		o.add("warc-prefix", *m.WarcPrefix)
	}
	if m.DedupBuckets != nil {
		o.add("dedup-buckets", dedupBucketsJSON(m.DedupBuckets))
	}
	if m.HasStatsBuckets {
		o.add("stats", statsJSON(m.StatsBucketList))
	}
	if m.hasLimits {
		o.add("limits", limitsJSON(m.Limits))
	}
	if m.hasSoftLimits {
		o.add("soft-limits", limitsJSON(m.SoftLimits))
	}
	if m.Blocks != nil {
		o.add("blocks", blocksJSON(m.Blocks))
	}
	if m.hasAccept {
		o.add("accept", nonNil(m.Accept))
	}
	if m.hasMimeFilters {
		o.add("mime-type-filters", nonNil(m.MimeTypeFilters))
	}
	if m.Metadata != nil {
		o.add("metadata", []byte(m.Metadata))
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.add(k, []byte(m.Extra[k]))
	}
	o.b.WriteByte('}')
	return o.b.Bytes(), o.err
}

// jsonObject writes the members of a JSON object in the order they are
// added, which encoding/json does not keep for a map. A []byte value is
// written as it is (already JSON); after the first error the members
// that follow are left out.
type jsonObject struct {
	b   bytes.Buffer
	n   int // members written
	err error
}

func (o *jsonObject) add(key string, v any) {
	if o.err != nil {
		return
	}
	if o.n > 0 {
		o.b.WriteByte(',')
	}
	o.n++
	k, _ := json.Marshal(key)
	o.b.Write(k)
	o.b.WriteByte(':')
	if raw, ok := v.([]byte); ok {
		o.b.Write(raw)
		return
	}
	enc, err := json.Marshal(v)
	o.b.Write(enc)
	o.err = err
}

// dedupBucketsJSON is {"NAME":"rw"|"ro",...}, buckets in the order given.
func dedupBucketsJSON(buckets []DedupBucket) []byte {
	var d bytes.Buffer
	d.WriteByte('{')
	for i, bk := range buckets {
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
	return d.Bytes()
}

// statsJSON is {"buckets":[...]}: a bucket's name, or an object when it
// tallies domains.
func statsJSON(buckets []Bucket) map[string]any {
	list := make([]any, 0, len(buckets))
	for _, bk := range buckets {
		if bk.TallyDomains == nil {
			list = append(list, bk.Name)
		} else {
			list = append(list, map[string]any{"bucket": bk.Name, "tally-domains": bk.TallyDomains})
		}
	}
	return map[string]any{"buckets": list}
}

// limitsJSON is {"KEY":VALUE,...}, limits in the order given.
func limitsJSON(ls []Limit) []byte {
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
	return d.Bytes()
}

// blocksJSON is the list of block rules, each as the client sent it.
func blocksJSON(rules []*Rule) []byte {
	var d bytes.Buffer
	d.WriteByte('[')
	for i, r := range rules {
		if i > 0 {
			d.WriteByte(',')
		}
		d.Write(r.Raw)
	}
	d.WriteByte(']')
	return d.Bytes()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
