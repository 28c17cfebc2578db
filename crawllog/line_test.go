package crawllog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	logged     = time.Date(2017, 8, 3, 21, 45, 24, 496_789_000, time.UTC)
	fetchStart = time.Date(2017, 8, 3, 21, 45, 23, 617_400_000, time.UTC)
)

const (
	digestA  = "sha1:PBS2CEF7B4OSEXZZF3QE2XN2VHYCPNPX"
	warcName = "crawl-20170803214522386-00000-abc.warc.gz"
)

// lineCases pin whole lines: the columns warcprox writes for each kind of
// capture, byte for byte.
var lineCases = []struct {
	name string
	e    Entry
	want string
}{{
	name: "200",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 54, URL: "http://example.com/b/aa",
		MIMEType: "text/plain", FetchStart: fetchStart, FetchDuration: 365 * time.Millisecond,
		PayloadDigest: digestA, ContentSize: 145, WARCFilename: warcName, WARCOffset: 942, Method: "GET",
	},
	want: `2017-08-03T21:45:24.496Z   200         54 http://example.com/b/aa - - text/plain - 20170803214523617+365 ` +
		digestA + ` - - {"contentSize":145,"warcFilename":"` + warcName + `","warcFileOffset":942}` + "\n",
}, {
	name: "revisit with seed and referer",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 54, URL: "http://example.com/b/aa",
		Referer: "http://example.com/referer", MIMEType: "text/plain; charset=utf-8",
		FetchStart: fetchStart, FetchDuration: 5 * time.Millisecond, PayloadDigest: digestA,
		Metadata: json.RawMessage(`{"seed":"http://example.com/seed"}`), Revisit: true,
		ContentSize: 145, WARCFilename: warcName, WARCOffset: 0,
	},
	want: `2017-08-03T21:45:24.496Z   200         54 http://example.com/b/aa - http://example.com/referer text/plain - 20170803214523617+005 ` +
		digestA + ` http://example.com/seed duplicate:digest {"contentSize":145,"warcFilename":"` + warcName + `","warcFileOffset":0}` + "\n",
}, {
	name: "WARCPROX_WRITE_RECORD",
	e: Entry{
		Logged: logged, Status: 204, ContentLength: 38, URL: "http://fakeurl/", MIMEType: "text/plain",
		FetchStart: fetchStart, FetchDuration: 0, PayloadDigest: "sha1:bb56497c17d2684f5eca4af9df908c78ba74ca1c",
		ContentSize: 38, WARCFilename: warcName, WARCOffset: 1234, Method: "WARCPROX_WRITE_RECORD",
	},
	want: `2017-08-03T21:45:24.496Z   204         38 http://fakeurl/ - - text/plain - 20170803214523617+000 sha1:bb56497c17d2684f5eca4af9df908c78ba74ca1c - - ` +
		`{"contentSize":38,"warcFilename":"` + warcName + `","warcFileOffset":1234,"method":"WARCPROX_WRITE_RECORD"}` + "\n",
}, {
	name: "connection failed",
	e: Entry{
		Logged: logged, Status: -2, URL: "http://localhost-doesnt-exist:8080/connection-error",
		Exception: "NewConnectionError", ExceptionMessage: "dial tcp: connection refused",
	},
	want: `2017-08-03T21:45:24.496Z    -2          0 http://localhost-doesnt-exist:8080/connection-error - - unknown - - - - - ` +
		`{"exception":"NewConnectionError","exceptionMessage":"dial_tcp:_connection_refused"}` + "\n",
}, {
	name: "cached failure -404, message without exception is dropped",
	e: Entry{
		Logged: logged, Status: -404, URL: "http://x.test/", ExceptionMessage: "ignored",
	},
	want: `2017-08-03T21:45:24.496Z  -404          0 http://x.test/ - - unknown - - - - - {}` + "\n",
}, {
	name: "hop path of an embed of a brozzled page",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 10, URL: "http://example.com/style.css",
		Referer: "http://example.com/ignored-referer", MIMEType: "text/css",
		FetchStart: fetchStart, FetchDuration: 1500 * time.Millisecond, PayloadDigest: digestA,
		Metadata: json.RawMessage(`{"seed":"http://example.com/","hop_path":"L","brozzled_url":"http://Example.COM/page","hop_via_url":"http://example.com/"}`),
	},
	want: `2017-08-03T21:45:24.496Z   200         10 http://example.com/style.css LB http://example.com/page text/css - 20170803214523617+1500 ` +
		digestA + ` http://example.com/ - {}` + "\n",
}, {
	name: "brozzled page itself: hop path and referer",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 10, URL: "http://example.com/page",
		Referer: "http://example.com/", MIMEType: "text/html",
		Metadata: json.RawMessage(`{"hop_path":"L","brozzled_url":"http://example.com/page","hop_via_url":"http://example.com/via"}`),
	},
	want: `2017-08-03T21:45:24.496Z   200         10 http://example.com/page L http://example.com/ text/html - - - - - {}` + "\n",
}, {
	name: "brozzled page without referer: hop_via_url, IDNA host, encoded path",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 154, URL: "http://localhost:8080/b/%C2%B6-non-ascii",
		MIMEType: "text/plain",
		Metadata: json.RawMessage(`{"seed":"http://example.com/¶-non-ascii","hop_path":"L",` +
			`"brozzled_url":"http://localhost:8080/b/¶-non-ascii","hop_via_url":"http://чунджа.kz/b/¶-non-ascii"}`),
	},
	want: `2017-08-03T21:45:24.496Z   200        154 http://localhost:8080/b/%C2%B6-non-ascii L http://xn--80ahg0a3ax.kz/b/%C2%B6-non-ascii text/plain - - - ` +
		"http://example.com/¶-non-ascii - {}\n",
}, {
	name: "embed with brozzled_url only: B hop",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 1, URL: "http://example.com/img.png", MIMEType: "image/png",
		Referer: "http://example.com/page", Metadata: json.RawMessage(`{"brozzled_url":"http://example.com/page"}`),
	},
	want: `2017-08-03T21:45:24.496Z   200          1 http://example.com/img.png B http://example.com/page image/png - - - - - {}` + "\n",
}, {
	name: "hop_via_url without hop_path is not used",
	e: Entry{
		Logged: logged, Status: 200, URL: "http://example.com/x", MIMEType: "text/html",
		Referer: "http://example.com/r", Metadata: json.RawMessage(`{"hop_via_url":"http://example.com/v"}`),
	},
	want: `2017-08-03T21:45:24.496Z   200          0 http://example.com/x - - text/html - - - - - {}` + "\n",
}, {
	name: "explicit hop path and via win",
	e: Entry{
		Logged: logged, Status: 301, URL: "http://example.com/x", HopPath: "LLR", Via: "http://example.com/v",
		MIMEType: "text/html", Metadata: json.RawMessage(`{"hop_path":"L","brozzled_url":"http://example.com/p"}`),
	},
	want: `2017-08-03T21:45:24.496Z   301          0 http://example.com/x LLR http://example.com/v text/html - - - - - {}` + "\n",
}, {
	name: "HEAD, not written",
	e: Entry{
		Logged: logged, Status: 200, URL: "http://example.com/b/cc", MIMEType: "text/plain",
		FetchStart: fetchStart, FetchDuration: 12 * time.Millisecond,
		PayloadDigest: "sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709", ContentSize: 91, Method: "HEAD",
	},
	want: `2017-08-03T21:45:24.496Z   200          0 http://example.com/b/cc - - text/plain - 20170803214523617+012 sha1:da39a3ee5e6b4b0d3255bfef95601890afd80709 - - ` +
		`{"contentSize":91,"method":"HEAD"}` + "\n",
}, {
	name: "blank mime type",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 4, URL: "http://example.com/space_in_content_type", MIMEType: " ",
		ContentSize: 59, WARCFilename: warcName, WARCOffset: 7,
	},
	want: `2017-08-03T21:45:24.496Z   200          4 http://example.com/space_in_content_type - - unknown - - - - - ` +
		`{"contentSize":59,"warcFilename":"` + warcName + `","warcFileOffset":7}` + "\n",
}, {
	name: "missing mime type",
	e: Entry{
		Logged: logged, Status: 200, ContentLength: 3, URL: "http://example.com/no-type", PayloadDigest: digestA,
		ContentSize: 40, WARCFilename: warcName, WARCOffset: 8,
	},
	want: `2017-08-03T21:45:24.496Z   200          3 http://example.com/no-type - - unknown - - ` + digestA + ` - - ` +
		`{"contentSize":40,"warcFilename":"` + warcName + `","warcFileOffset":8}` + "\n",
}, {
	name: "spaces, line breaks and non-ASCII are escaped",
	e: Entry{
		Logged: logged.In(time.FixedZone("X", 3600)), Status: 200, URL: "http://example.com/a b",
		Referer: "http://example.com/\r\nInjected: 1", MIMEType: "text/html x",
		FetchStart: fetchStart.In(time.FixedZone("Y", -7200)), FetchDuration: 1,
		Metadata:  json.RawMessage(`{"seed":"my seed\nline\u2028\t\u0000\u00a0é\ud83d\ude00 ","hop_path":null}`),
		Exception: "Err\n1 \"q\"", ExceptionMessage: "é 😀\u007f\\", WARCFilename: "a b.warc.gz", Method: "P\tOST",
	},
	want: "2017-08-03T21:45:24.496Z   200          0 http://example.com/a%20b - http://example.com/%0D%0AInjected:%201 text/html%20x - " +
		"20170803214523617+000 - my%20seed%0Aline%E2%80%A8%09%00%C2%A0é😀%20 - " +
		`{"exception":"Err\n1_\"q\"","exceptionMessage":"\u00e9_\ud83d\ude00\u007f\\","warcFilename":"a\u0020b.warc.gz","warcFileOffset":0,"method":"P\tOST"}` + "\n",
}, {
	name: "non-string and empty metadata values",
	e: Entry{
		Logged: logged, Status: 200, URL: "http://example.com/", MIMEType: "text/html",
		Metadata: json.RawMessage(`{"seed": {"a": [1, 2]}, "hop_path": ""}`),
	},
	want: `2017-08-03T21:45:24.496Z   200          0 http://example.com/ - - text/html - - - {"a":[1,2]} - {}` + "\n",
}, {
	name: "metadata that is not an object is ignored",
	e: Entry{
		Logged: logged, Status: 200, URL: "http://example.com/", MIMEType: "text/html",
		Referer: "http://r/", Metadata: json.RawMessage(`"seed"`),
	},
	want: `2017-08-03T21:45:24.496Z   200          0 http://example.com/ - http://r/ text/html - - - - - {}` + "\n",
}, {
	name: "wide status and length",
	e: Entry{
		Logged: logged, Status: 123456, ContentLength: 12345678901, URL: "http://e/", MIMEType: "a/b",
		FetchStart: fetchStart, FetchDuration: -time.Second,
	},
	want: `2017-08-03T21:45:24.496Z 123456 12345678901 http://e/ - - a/b - 20170803214523617+000 - - - {}` + "\n",
}}

func TestLineFormat(t *testing.T) {
	for _, tt := range lineCases {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendLine(nil, &tt.e, time.Time{}))
			require.Equal(t, tt.want, got)
			require.Len(t, strings.Fields(got), 13, "whitespace split")
			l, err := ParseLine(got)
			require.NoError(t, err)
			require.Equal(t, tt.e.Status, l.Status)
			require.Equal(t, tt.e.ContentLength, l.ContentLength)
			require.Equal(t, tt.e.Revisit, l.Revisit)
			require.Equal(t, max(tt.e.ContentSize, 0), l.ContentSize)
			require.Equal(t, tt.e.WARCFilename, l.WARCFilename)
			require.Equal(t, tt.e.WARCOffset, l.WARCOffset)
			if tt.e.Method != "GET" {
				require.Equal(t, tt.e.Method, l.Method)
			}
			if tt.e.Exception != "" {
				require.Equal(t, strings.ReplaceAll(tt.e.Exception, " ", "_"), l.Exception)
			}
		})
	}
}

func TestLineDefaultsToNow(t *testing.T) {
	before := time.Now().UTC().Truncate(time.Millisecond)
	l, err := ParseLine(string(appendLine(nil, &Entry{Status: 200, URL: "http://e/"}, time.Now())))
	require.NoError(t, err)
	after := time.Now().UTC()
	require.False(t, l.Logged.Before(before), "logged %v before %v", l.Logged, before)
	require.False(t, l.Logged.After(after), "logged %v after %v", l.Logged, after)
	require.Equal(t, time.UTC, l.Logged.Location())
}

func TestCanonicalizeURL(t *testing.T) {
	tests := []struct{ in, want string }{
		// warcprox's test_crawl_log_canonicalization
		{"", ""},
		{"-", "-"},
		{"http://чунджа.kz/b/¶-non-ascii", "http://xn--80ahg0a3ax.kz/b/%C2%B6-non-ascii"},
		{"Not a URL", "Not a URL"},
		// host case and port
		{"HTTP://User%3a@Example.COM:080/A?B=%7e#F", "HTTP://User%3A@example.com:80/A?B=%7e#F"},
		{"http://example.com:0/", "http://example.com/"},
		{"http://example.com:/", "http://example.com/"},
		{"http://@example.com/", "http://example.com/"},
		{"//bücher.de/", "//xn--bcher-kva.de/"},
		{"http://BÜCHER.de./", "http://xn--bcher-kva.de./"},
		{"http://faß.de/", "http://fass.de/"},
		{"http://ｅｘａｍｐｌｅ。com/", "http://example.com/"},
		{"http://under_score.bücher.de/", "http://under_score.xn--bcher-kva.de/"},
		{"http://[::1]:8080/", "http://[::1]:8080/"},
		{"http://[FE80::1%25EN0]/", "http://[fe80::1%25EN0]/"},
		{"http://[FE80::1%EN0]/", "http://[fe80::1%25EN0]/"},
		// path, query and fragment encoding
		{"http://e.com/a b?c d#e f", "http://e.com/a%20b?c%20d#e%20f"},
		{"http://e.com/100%/%41", "http://e.com/100%25/%2541"},
		{"http://e.com/%41%e9/~x!*'()<>\"{}|\\^`", "http://e.com/%41%e9/~x!*'()%3C%3E%22%7B%7D%7C%5C%5E%60"},
		{"http://e.com/\n", "http://e.com/%0A"},
		// unencodable hosts come back as they were
		{"http://a..b/ü", "http://a..b/ü"},
		{"http://" + strings.Repeat("a", 64) + ".com/ü", "http://" + strings.Repeat("a", 64) + ".com/ü"},
		{"http:///path", "http:///path"},
		{"mailto:x@example.com", "mailto:x@example.com"},
		{"http://example.com:x/", "http://example.com:x/"}, // warcprox raises InvalidPort
		// more, each checked against warcprox's canonicalize_url
		{"http://user:pässword@bücher.de:8080/ä?ö=ü#ß", "http://user:pässword@xn--bcher-kva.de:8080/%C3%A4?%C3%B6=%C3%BC#%C3%9F"},
		{"http://例え.テスト/パス", "http://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9"},
		{"https://EXAMPLE.com", "https://example.com"},
		{"http://h/?", "http://h/?"},
		{"http://h/#", "http://h/#"},
		{"http://h/a%2fb%zz", "http://h/a%252fb%25zz"},
		{"http://h:99999/", "http://h:99999/"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, canonicalizeURL(tt.in), "canonicalizeURL(%q)", tt.in)
	}
}
