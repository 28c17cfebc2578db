package stats_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
)

func parseMeta(t *testing.T, header string) *warcproxmeta.Meta {
	t.Helper()
	if header == "" {
		return nil
	}
	m, err := warcproxmeta.Parse(header)
	require.NoError(t, err)
	return m
}

func TestBuckets(t *testing.T) {
	// warcprox's unravel_buckets docstring example.
	const docstring = `{"stats":{"buckets":["bucket1",{"bucket":"bucket2","tally-domains":["foo.bar.com","192.168.10.20"]}]}}`
	for _, tt := range []struct {
		name, url, header string
		want              []string
	}{
		{name: "docstring host", url: "http://foo.bar.com/a", header: docstring,
			want: []string{"__all__", "bucket1", "bucket2", "bucket2:foo.bar.com"}},
		{name: "docstring subdomain", url: "https://www.foo.bar.com/a", header: docstring,
			want: []string{"__all__", "bucket1", "bucket2", "bucket2:foo.bar.com"}},
		{name: "docstring IP", url: "http://192.168.10.20:8080/", header: docstring,
			want: []string{"__all__", "bucket1", "bucket2", "bucket2:192.168.10.20"}},
		{name: "docstring parent domain does not match", url: "http://bar.com/", header: docstring,
			want: []string{"__all__", "bucket1", "bucket2"}},
		{name: "no header", url: "http://example.com/",
			want: []string{"__all__", "__unspecified__"}},
		{name: "no stats", url: "http://example.com/", header: `{"warc-prefix":"x"}`,
			want: []string{"__all__", "__unspecified__"}},
		{name: "stats without buckets", url: "http://example.com/", header: `{"stats":{}}`,
			want: []string{"__all__", "__unspecified__"}},
		{name: "explicit empty list", url: "http://example.com/", header: `{"stats":{"buckets":[]}}`,
			want: []string{"__all__"}},
		{name: "subdomain", url: "http://a.b.example.com/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["example.com","b.example.com","c.example.com"]}]}}`,
			want: []string{"__all__", "j", "j:example.com", "j:b.example.com"}},
		{name: "suffix is not a subdomain", url: "http://notexample.com/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["example.com"]}]}}`,
			want: []string{"__all__", "j"}},
		{name: "domain inside another name", url: "http://example.com.evil.org/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["example.com"]}]}}`,
			want: []string{"__all__", "j"}},
		{name: "IP matches only itself", url: "http://10.1.2.3/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["1.2.3","10.1.2.3","10.1.2.30"]}]}}`,
			want: []string{"__all__", "j", "j:10.1.2.3"}},
		{name: "IPv4 in another form", url: "http://0x0a.1.0x203/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["10.1.2.3"]}]}}`,
			want: []string{"__all__", "j", "j:10.1.2.3"}},
		{name: "IPv6", url: "http://[::1]:8080/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["[::1]","::1","[::2]"]}]}}`,
			want: []string{"__all__", "j", "j:[::1]"}},
		{name: "IDN URL, punycode domain", url: "http://bücher.example/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["xn--bcher-kva.example"]}]}}`,
			want: []string{"__all__", "j", "j:xn--bcher-kva.example"}},
		{name: "punycode URL, IDN domain", url: "http://www.xn--bcher-kva.example/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["BÜCHER.example"]}]}}`,
			want: []string{"__all__", "j", "j:xn--bcher-kva.example"}},
		{name: "upper case and dots", url: "http://WWW.Example.COM./", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["..EXAMPLE..com."]}]}}`,
			want: []string{"__all__", "j", "j:example.com"}},
		{name: "port and userinfo", url: "https://user:pw@example.com:8443/p?q#f", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":["example.com"]}]}}`,
			want: []string{"__all__", "j", "j:example.com"}},
		{name: "empty tally-domains", url: "http://example.com/", header: `{"stats":{"buckets":[{"bucket":"j","tally-domains":[]}]}}`,
			want: []string{"__all__", "j"}},
		{name: "names repeated count once", url: "http://example.com/", header: `{"stats":{"buckets":["__all__","a","a",{"bucket":"a","tally-domains":["example.com","EXAMPLE.COM"]}]}}`,
			want: []string{"__all__", "a", "a:example.com"}},
		{name: "empty name skipped", url: "http://example.com/", header: `{"stats":{"buckets":["","b"]}}`,
			want: []string{"__all__", "b"}},
		{name: "bucket name kept as given", url: "http://example.com/", header: `{"stats":{"buckets":["Job/1:X","bücher"]}}`,
			want: []string{"__all__", "Job/1:X", "bücher"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, stats.Buckets(tt.url, parseMeta(t, tt.header)))
		})
	}
}

func TestNormalizeHost(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"example.com", "example.com"},
		{"Example.COM.", "example.com"},
		{"..a..b...c..", "a.b.c"},
		{"Bücher.Example", "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"bücher．example", "xn--bcher-kva.example"}, // full-width dot
		{"xn--", "xn--"},
		{"faß.de", "xn--fa-hia.de"},        // IDNA2008, non-transitional
		{"ＥＸＡＭＰＬＥ.com", "example.com"},     // full-width letters map
		{"%65xample.%43OM", "example.com"}, // percent-escapes decoded
		{"%2565xample.com", "example.com"}, // ... until none is left
		{"127.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"1.2.3.256", "1.2.3.256"}, // not an address
		{"1..2.", "1.0.0.2"},
		{"[::FFFF:1.2.3.4]", "[::ffff:1.2.3.4]"},
		{"[0:0::1]", "[::1]"},
		{"::1", "[::1]"},
		{"Foo_Bar.COM", "foo_bar.com"}, // not valid IDNA: lower-cased and kept
		{"-FOO.com", "-foo.com"},
		{"ex ample.com", "ex%20ample.com"},
		{"", ""},
		{"...", ""},
	} {
		t.Run(tt.in, func(t *testing.T) {
			require.Equal(t, tt.want, stats.NormalizeHost(tt.in))
			require.Equal(t, tt.want, stats.NormalizeHost(tt.want), "idempotent")
		})
	}
}

func TestLimitBucket(t *testing.T) {
	for _, tt := range []struct{ key, bucket, echo string }{
		{"job1/total/urls", "job1", "job1/total/urls"},
		{"__all__/new/wire_bytes", "__all__", "__all__/new/wire_bytes"},
		{"job1:FOO.com./new/wire_bytes", "job1:foo.com", "job1:foo.com/new/wire_bytes"},
		{"job1:bücher.example/total/urls", "job1:xn--bcher-kva.example", "job1:xn--bcher-kva.example/total/urls"},
		{"a/b:Example.com/revisit/urls", "a/b:example.com", "a/b:example.com/revisit/urls"},
		{"job1:x:Y.com/total/urls", "job1:x:y.com", "job1:x:y.com/total/urls"}, // split at the first colon
	} {
		t.Run(tt.key, func(t *testing.T) {
			m := parseMeta(t, `{"limits":{`+mustJSON(t, tt.key)+`:10}}`)
			require.Len(t, m.Limits, 1)
			bucket, echo := stats.LimitBucket(m.Limits[0])
			require.Equal(t, tt.bucket, bucket)
			require.Equal(t, tt.echo, echo)
		})
	}
}

// TestLimitBucketMatchesBuckets: a domain limit names the bucket the
// capture is tallied in, however the domain is spelt in each place.
func TestLimitBucketMatchesBuckets(t *testing.T) {
	m := parseMeta(t, `{"stats":{"buckets":[{"bucket":"job1","tally-domains":["Bücher.example."]}]},"limits":{"job1:XN--BCHER-KVA.example/total/urls":1}}`)
	bucket, _ := stats.LimitBucket(m.Limits[0])
	require.Contains(t, stats.Buckets("http://www.bücher.example/", m), bucket)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestDoc(t *testing.T) {
	v := stats.Bucket{
		Total:   stats.Counts{URLs: 3, WireBytes: 300},
		New:     stats.Counts{URLs: 2, WireBytes: 200},
		Revisit: stats.Counts{URLs: 1, WireBytes: 100},
	}
	got, err := json.Marshal(v.Doc("job1"))
	require.NoError(t, err)
	require.Equal(t, `{"bucket":"job1","total":{"urls":3,"wire_bytes":300},"new":{"urls":2,"wire_bytes":200},"revisit":{"urls":1,"wire_bytes":100}}`, string(got))

	// Escaped as Python's json.dumps does, so it fits in a header.
	// (json.Marshal escapes <, > and & on top, as \u003c and so on.)
	name := "a\"b\\c\n\x01\x7fé🎉\u2028<>&/"
	got, err = stats.Bucket{}.Doc(name).MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, `{"bucket":"a\"b\\c\n\u0001\u007f\u00e9\ud83c\udf89\u2028<>&/","total":{"urls":0,"wire_bytes":0},"new":{"urls":0,"wire_bytes":0},"revisit":{"urls":0,"wire_bytes":0}}`, string(got))

	var back stats.Doc
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, name, back.Bucket)

	got, err = json.Marshal(map[string]any{"stats": map[string]stats.Doc{"job1": v.Doc("job1")}})
	require.NoError(t, err)
	require.JSONEq(t, `{"stats":{"job1":{"bucket":"job1","total":{"urls":3,"wire_bytes":300},"new":{"urls":2,"wire_bytes":200},"revisit":{"urls":1,"wire_bytes":100}}}}`, string(got))
	require.NoError(t, json.Unmarshal(got, &map[string]map[string]stats.Doc{}))
	var d stats.Doc
	require.NoError(t, json.Unmarshal([]byte(`{"bucket":"job1","total":{"urls":3,"wire_bytes":300},"new":{"urls":2,"wire_bytes":200},"revisit":{"urls":1,"wire_bytes":100}}`), &d))
	require.Equal(t, v, d.Value())
}

func TestBucketValue(t *testing.T) {
	v := stats.Bucket{
		Total:   stats.Counts{URLs: 1, WireBytes: 2},
		New:     stats.Counts{URLs: 3, WireBytes: 4},
		Revisit: stats.Counts{URLs: 5, WireBytes: 6},
	}
	for _, tt := range []struct {
		category, stat string
		want           int64
		ok             bool
	}{
		{"total", "urls", 1, true}, {"total", "wire_bytes", 2, true},
		{"new", "urls", 3, true}, {"new", "wire_bytes", 4, true},
		{"revisit", "urls", 5, true}, {"revisit", "wire_bytes", 6, true},
		{"total", "bytes", 0, false}, {"all", "urls", 0, false}, {"Total", "urls", 0, false},
	} {
		got, ok := v.Value(tt.category, tt.stat)
		require.Equal(t, tt.ok, ok, tt.category+"/"+tt.stat)
		require.Equal(t, tt.want, got, tt.category+"/"+tt.stat)
	}
}
