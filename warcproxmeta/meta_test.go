package warcproxmeta

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func compress(t testing.TB, s string) string {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func TestParseFields(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		header string
		check  func(t *testing.T, m *Meta)
	}{
		{"empty", `{}`, func(t *testing.T, m *Meta) {
			require.Nil(t, m.WarcPrefix)
			require.Nil(t, m.DedupBuckets)
			require.Equal(t, []Bucket{{Name: UnspecifiedBucket}}, m.StatsBuckets())
		}},
		{"warc-prefix", `{"warc-prefix":"job1"}`, func(t *testing.T, m *Meta) {
			require.Equal(t, str("job1"), m.WarcPrefix)
			require.False(t, m.DoNotArchive())
		}},
		{"do not archive", `{"warc-prefix":"-"}`, func(t *testing.T, m *Meta) { require.True(t, m.DoNotArchive()) }},
		{"dedup-buckets order", `{"dedup-buckets":{"z":"rw","a":"ro","m":""}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{"z", false}, {"a", true}, {"m", false}}, m.DedupBuckets)
		}},
		{"dedup-buckets duplicate keeps place, last mode", `{"dedup-buckets":{"a":"rw","b":"rw","a":"ro"}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{"a", true}, {"b", false}}, m.DedupBuckets)
		}},
		{"legacy dedup-bucket", `{"dedup-bucket":"old"}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{Name: "old"}}, m.DedupBuckets)
		}},
		{"legacy captures-bucket", `{"captures-bucket":"cap"}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{Name: "cap"}}, m.DedupBuckets)
		}},
		{"legacy replaces dedup-buckets", `{"dedup-bucket":"old","dedup-buckets":{"a":"ro"}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{Name: "old"}}, m.DedupBuckets)
		}},
		{"dedup-bucket beats captures-bucket", `{"dedup-bucket":"d","captures-bucket":"c"}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []DedupBucket{{Name: "d"}}, m.DedupBuckets)
		}},
		{"stats", `{"stats":{"buckets":["b1",{"bucket":"b2","tally-domains":["foo.bar.com","192.168.10.20"]},{"nobucket":1}]}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []Bucket{{Name: "b1"}, {Name: "b2", TallyDomains: []string{"foo.bar.com", "192.168.10.20"}}}, m.StatsBuckets())
		}},
		{"stats without buckets", `{"stats":{}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []Bucket{{Name: UnspecifiedBucket}}, m.StatsBuckets())
		}},
		{"stats empty buckets", `{"stats":{"buckets":[]}}`, func(t *testing.T, m *Meta) { require.Empty(t, m.StatsBuckets()) }},
		{"limits order and parts", `{"limits":{"b/total/urls":10,"job:foo.com/new/wire_bytes":1e3,"a/b/revisit/urls":0}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []Limit{
				{Key: "b/total/urls", Bucket: "b", Category: "total", Stat: "urls", Value: 10},
				{Key: "job:foo.com/new/wire_bytes", Bucket: "job:foo.com", Category: "new", Stat: "wire_bytes", Value: 1000},
				{Key: "a/b/revisit/urls", Bucket: "a/b", Category: "revisit", Stat: "urls", Value: 0},
			}, m.Limits)
			b, d, ok := m.Limits[1].Domain()
			require.True(t, ok)
			require.Equal(t, [2]string{"job", "foo.com"}, [2]string{b, d})
		}},
		{"soft-limits", `{"soft-limits":{"b:foo.localhost/total/urls":10}}`, func(t *testing.T, m *Meta) {
			require.Len(t, m.SoftLimits, 1)
			require.EqualValues(t, 10, m.SoftLimits[0].Value)
		}},
		{"blocks", `{"blocks":[{"ssurt":"com,example,//http:/"},{"domain":"malware.us","substring":"wp-login.php?action=logout"}]}`, func(t *testing.T, m *Meta) {
			require.Len(t, m.Blocks, 2)
			require.Equal(t, `{"domain":"malware.us","substring":"wp-login.php?action=logout"}`, string(m.Blocks[1].Raw))
		}},
		{"api.rst compressed_blocks", `{"compressed_blocks": "eJwVykEKgCAQQNGryKwt90F0kGgxlZSgzuCMFIR3r7b//fkBkVoUBgMbJetvTBy9de5U5cFBs+aBnRKG/D8J44XF91XAGpC6ipaQj58u7iIdIfd88oSbBsrjF6gqtOUFJ5YjwQ=="}`, func(t *testing.T, m *Meta) {
			require.Len(t, m.Blocks, 2)
			require.Equal(t, map[string]any{"ssurt": "com,example,//http:/"}, m.Blocks[0].Fields)
		}},
		{"compressed_blocks wins over blocks", `{"compressed_blocks":"` + compress(t, `[{"domain":"a.com"}]`) + `","blocks":[{"domain":"b.com"}]}`, func(t *testing.T, m *Meta) {
			require.Len(t, m.Blocks, 1)
			require.Equal(t, "a.com", m.Blocks[0].Fields["domain"])
		}},
		{"accept", `{"accept":["capture-metadata"]}`, func(t *testing.T, m *Meta) {
			require.True(t, m.Accepts("capture-metadata"))
			require.False(t, m.Accepts("other"))
		}},
		{"mime-type-filters", `{"mime-type-filters":[{"type":"REJECT","regex":"some/mimetype"}]}`, func(t *testing.T, m *Meta) {
			require.Equal(t, []MimeTypeFilter{{Type: "REJECT", Regex: "some/mimetype"}}, m.MimeTypeFilters)
		}},
		{"metadata", `{"metadata":{"seed":"http://example.com/seed","n":[1,2]}}`, func(t *testing.T, m *Meta) {
			require.JSONEq(t, `{"seed":"http://example.com/seed","n":[1,2]}`, string(m.Metadata))
		}},
		{"unknown keys kept", `{"dedup-ok":false,"x":{"y":[1]}}`, func(t *testing.T, m *Meta) {
			require.Equal(t, "false", string(m.Extra["dedup-ok"]))
			require.Equal(t, `{"y":[1]}`, string(m.Extra["x"]))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.header)
			require.NoError(t, err)
			tt.check(t, m)
			out, err := json.Marshal(m)
			require.NoError(t, err)
			m2, err := Parse(string(out))
			require.NoError(t, err, "re-parsing %s", out)
			out2, err := json.Marshal(m2)
			require.NoError(t, err)
			require.Equal(t, string(out), string(out2))
		})
	}
}

var badHeaders = []struct{ header, field, want string }{
	{``, "", "not valid JSON"},
	{`[]`, "", "not a JSON object"},
	{`"x"`, "", "not a JSON object"},
	{`{"a":1} {}`, "", "data after"},
	{`{"a":`, "a", "not valid JSON"},
	{`{"warc-prefix":1}`, "warc-prefix", "must be a string"},
	{`{"warc-prefix":null}`, "warc-prefix", "null"},
	{`{"warc-prefix":"a/b"}`, "warc-prefix", "slash"},
	{`{"warc-prefix":"a\\b"}`, "warc-prefix", "slash"},
	{`{"dedup-buckets":["a"]}`, "dedup-buckets", "object"},
	{`{"dedup-buckets":{"a":1}}`, "dedup-buckets", "must be a string"},
	{`{"dedup-buckets":{"a":{}}}`, "dedup-buckets", "must not be objects"},
	{`{"dedup-bucket":["a"]}`, "dedup-bucket", "must be a string"},
	{`{"captures-bucket":1}`, "captures-bucket", "must be a string"},
	{`{"stats":[]}`, "stats", "object"},
	{`{"stats":{"buckets":"a"}}`, "stats", "list"},
	{`{"stats":{"buckets":[1]}}`, "stats", "buckets[0]"},
	{`{"stats":{"buckets":[{"bucket":1}]}}`, "stats", "must be a string"},
	{`{"stats":{"buckets":[{"bucket":"a","tally-domains":"x"}]}}`, "stats", "tally-domains"},
	{`{"limits":[]}`, "limits", "object"},
	{`{"limits":{"a/total/urls":"10"}}`, "limits", "number"},
	{`{"limits":{"a/total/urls":-1}}`, "limits", "negative"},
	{`{"limits":{"a/total/urls":1.5}}`, "limits", "whole"},
	{`{"limits":{"a/total/urls":1e300}}`, "limits", "too large"},
	{`{"limits":{"total/urls":1}}`, "limits", "must look like"},
	{`{"limits":{"a/all/urls":1}}`, "limits", "total, new, revisit"},
	{`{"soft-limits":{"a/total/bytes":1}}`, "soft-limits", "urls, wire_bytes"},
	{`{"blocks":{}}`, "blocks", "list"},
	{`{"blocks":["x"]}`, "blocks", "rule 0"},
	{`{"blocks":[{"domain":1}]}`, "blocks", `"domain" must be a string`},
	{`{"blocks":[{"exact":"yes"}]}`, "blocks", "exact"},
	{`{"blocks":[{"host":"a"}]}`, "blocks", "unknown condition"},
	{`{"blocks":[{"regex":"("}]}`, "blocks", "regex"},
	{`{"blocks":[{"regex":"a)|(b"}]}`, "blocks", "regex"}, // valid only once wrapped
	{`{"blocks":[{"url_match":"FOO","value":"x"}]}`, "blocks", "url_match"},
	{`{"blocks":[{"url_match":"SURT_MATCH","value":"x","surt":"y"}]}`, "blocks", "conflicts"},
	{`{"compressed_blocks":1}`, "compressed_blocks", "must be a string"},
	{`{"compressed_blocks":"!!!"}`, "compressed_blocks", "zlib"},
	{`{"compressed_blocks":"abc"}`, "compressed_blocks", "base64"},
	{`{"accept":"capture-metadata"}`, "accept", "list of strings"},
	{`{"accept":[1]}`, "accept", "list of strings"},
	{`{"mime-type-filters":{}}`, "mime-type-filters", "list"},
	{`{"mime-type-filters":[{"type":"REJECT"}]}`, "mime-type-filters", "regex"},
	{`{"mime-type-filters":[{"type":1,"regex":"x"}]}`, "mime-type-filters", "type"},
	{`{"metadata":[]}`, "metadata", "object"},
	{`{"metadata":null}`, "metadata", "null"},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range badHeaders {
		t.Run(tt.header, func(t *testing.T) {
			_, err := Parse(tt.header)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.True(t, errors.As(err, &e))
			require.Equal(t, tt.field, e.Field, "%v", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCompressedBlocksBadContent(t *testing.T) {
	for _, body := range []string{`{"domain":"a"}`, `not json`, `[1]`} {
		_, err := Parse(`{"compressed_blocks":"` + compress(t, body) + `"}`)
		require.ErrorIs(t, err, ErrInvalid, body)
		require.Contains(t, err.Error(), "compressed_blocks")
	}
}

func TestCompressedBlocksRoundTrip(t *testing.T) {
	rules := `[{"surt":"http://(com,example,)/a"},{"domain":"malware.us","substring":"logout"}]`
	enc := compress(t, rules)
	// Python's b64decode skips characters outside the alphabet; so do we.
	m, err := Parse(`{"compressed_blocks":"` + enc[:10] + `\n` + enc[10:] + `"}`)
	require.NoError(t, err)
	plain, err := Parse(`{"blocks":` + rules + `}`)
	require.NoError(t, err)
	a, _ := json.Marshal(m)
	b, _ := json.Marshal(plain)
	require.JSONEq(t, string(b), string(a))
	r, ok := m.Blocked("http://www.malware.us/logout")
	require.True(t, ok)
	require.Equal(t, "malware.us", r["domain"])
}

func TestLargeHeader(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"warc-prefix":"big","metadata":{"pad":"`)
	b.WriteString(strings.Repeat("x", 512<<10))
	b.WriteString(`"},"blocks":[`)
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"domain":"d` + strings.Repeat("y", 40) + `.com","substring":"/z"}`)
	}
	b.WriteString(`],"dedup-buckets":{"a":"rw"}}`)
	m, err := Parse(b.String())
	require.NoError(t, err)
	require.Equal(t, "big", *m.WarcPrefix)
	require.Greater(t, len(m.Blocks), 1000)
	_, blocked := m.Blocked("http://example.com/")
	require.False(t, blocked)
}

func TestBlocked(t *testing.T) {
	tests := []struct {
		rule, url string
		want      bool
	}{
		{`{"domain":"example.com"}`, "http://example.com/", true},
		{`{"domain":"example.com"}`, "https://sub.example.com/x", true},
		{`{"domain":"example.com"}`, "http://EXAMPLE.com./x", true},
		{`{"domain":"example.com"}`, "http://notexample.com/", false},
		{`{"domain":"example.com"}`, "http://example.com.evil.org/", false},
		{`{"domain":"example.com","exact":true}`, "http://sub.example.com/", false},
		{`{"domain":"127.0.0.1"}`, "http://127.0.0.1:8080/", true},
		{`{"domain":"0.1"}`, "http://127.0.0.1/", false},
		{`{"surt":"http://(com,example,"}`, "http://www.example.com/foo", true},
		{`{"surt":"http://(com,example,)/foo"}`, "http://example.com/foo/bar", true},
		{`{"surt":"http://(com,example,)/foo"}`, "http://www.example.com/foo", false}, // semantic keeps www
		{`{"surt":"http://(com,example,)/foo"}`, "https://example.com/foo", false},
		{`{"surt":"https://(com,example,:8443)/"}`, "https://example.com:8443/x", true},
		{`{"surt":"http://(com,example,)/"}`, "http://example.com:80", true},
		{`{"surt":"http://(com,example,)/a?b=1&c=2"}`, "http://example.com/a?c=2&b=1#frag", true},
		{`{"surt":"http://(127.0.0.1:8080)/"}`, "http://127.0.0.1:8080/x", true},
		{`{"ssurt":"com,example,//http:/"}`, "http://example.com/x", true},
		{`{"ssurt":"com,example,//8080:http:/"}`, "http://example.com:8080/x", true},
		{`{"ssurt":"com,example,//http:/"}`, "https://example.com/x", false},
		{`{"substring":"wp-login"}`, "http://a.org/wp-login.php", true},
		{`{"substring":"wp-login"}`, "http://a.org/index.php", false},
		{`{"domain":"malware.us","substring":"logout"}`, "http://malware.us/logout", true},
		{`{"domain":"malware.us","substring":"logout"}`, "http://other.us/logout", false},
		{`{"regex":"https?://(www\\.)?youtube\\.com/watch.*"}`, "https://www.youtube.com/watch?v=1", true},
		{`{"regex":"https?://youtube\\.com/"}`, "https://youtube.com/watch", false}, // full match
		{`{"url_match":"STRING_MATCH","value":"bar"}`, "http://foo/bar", true},
		{`{"url_match":"SURT_MATCH","value":"http://(org,"}`, "http://a.org/", true},
		{`{"url_match":"REGEX_MATCH","value":".*\\.pdf"}`, "http://a.org/x.pdf", true},
		{`{"parent_url_regex":".*"}`, "http://a.org/", false},
		{`{}`, "http://anything/", true},
		{`{"domain":null,"substring":""}`, "http://anything/", true},
		{`{"substring":"/b/"}`, "http://a.org/b/../b/./c//d", true},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.url, func(t *testing.T) {
			m, err := Parse(`{"blocks":[{"domain":"never.invalid"},` + tt.rule + `]}`)
			require.NoError(t, err)
			rule, ok := m.Blocked(tt.url)
			require.Equal(t, tt.want, ok, "canonical %s surt %s", Canonicalize(tt.url), Canonicalize(tt.url).SURT())
			if ok {
				var want map[string]any
				require.NoError(t, json.Unmarshal([]byte(tt.rule), &want))
				require.Equal(t, want, rule)
			}
		})
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, url, surt, ssurt string }{
		{"HTTP://User:pw@WWW.Example.COM:80/a/./b/../c?z=1&a=2#f", "http://www.example.com/a/c?a=2&z=1", "http://(com,example,www,)/a/c?a=2&z=1", "com,example,www,//http:/a/c?a=2&z=1"},
		{"https://example.com", "https://example.com/", "https://(com,example,)/", "com,example,//https:/"},
		{"http://[::1]:8080/x", "http://[::1]:8080/x", "http://([::1]:8080)/x", "[::1]//8080:http:/x"},
	}
	for _, tt := range tests {
		u := Canonicalize(tt.in)
		require.Equal(t, tt.url, u.String())
		require.Equal(t, tt.surt, u.SURT())
		require.Equal(t, tt.ssurt, u.SSURT())
	}
}
