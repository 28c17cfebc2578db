package warcproxmeta

import (
	"encoding/json"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"warc-prefix":"-"}`, `{"dedup-buckets":{"a":"rw","b":"ro"}}`, `{"dedup-bucket":"x","captures-bucket":"y"}`,
		`{"stats":{"buckets":["a",{"bucket":"b","tally-domains":["x.com"]}]}}`,
		`{"limits":{"a/total/urls":10},"soft-limits":{"a:b.com/new/wire_bytes":5}}`,
		`{"blocks":[{"domain":"a.com","substring":"x"},{"surt":"http://(com,"},{"url_match":"REGEX_MATCH","value":".*"}]}`,
		`{"compressed_blocks":"eJwVykEKgCAQQNGryKwt90F0kGgxlZSgzuCMFIR3r7b//fkBkVoUBgMbJetvTBy9de5U5cFBs+aBnRKG/D8J44XF91XAGpC6ipaQj58u7iIdIfd88oSbBsrjF6gqtOUFJ5YjwQ=="}`,
		`{"accept":["capture-metadata"],"mime-type-filters":[{"type":"LIMIT","regex":"text/.*"}],"metadata":{"seed":"x"},"z":1}`,
	} {
		f.Add(s)
	}
	for _, b := range badHeaders {
		f.Add(b.header)
	}
	f.Fuzz(func(t *testing.T, header string) {
		m, err := Parse(header)
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %q: %v", header, err)
		}
		if _, err := Parse(string(out)); err != nil {
			t.Fatalf("re-parse of %s (from %q): %v", out, header, err)
		}
		m.Blocked("http://www.example.com:8080/a/b?c=d")
		m.StatsBuckets()
	})
}
