package crawllog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
)

func TestParseLine(t *testing.T) {
	s := `2017-08-03T21:45:24.496Z   200       2189 https://example.com/robots.txt P https://example.com/ text/plain - ` +
		`20170803214523617+1365 sha1:PBS2CEF7B4OSEXZZF3QE2XN2VHYCPNPX https://example.com/ duplicate:digest ` +
		`{"warcFileOffset":942,"contentSize":2495,"warcFilename":"x.warc.gz","other":[1]}` + "\n"
	got, err := ParseLine(s)
	require.NoError(t, err)
	want := Line{
		Logged:        time.Date(2017, 8, 3, 21, 45, 24, 496_000_000, time.UTC),
		Status:        200,
		ContentLength: 2189,
		URL:           "https://example.com/robots.txt",
		HopPath:       "P",
		Via:           "https://example.com/",
		MIMEType:      "text/plain",
		Discovery:     "-",
		FetchStart:    time.Date(2017, 8, 3, 21, 45, 23, 617_000_000, time.UTC),
		FetchDuration: 1365 * time.Millisecond,
		PayloadDigest: "sha1:PBS2CEF7B4OSEXZZF3QE2XN2VHYCPNPX",
		Seed:          "https://example.com/",
		Annotations:   "duplicate:digest",
		Revisit:       true,
		ContentSize:   2495,
		WARCFilename:  "x.warc.gz",
		WARCOffset:    942,
		Extra:         `{"warcFileOffset":942,"contentSize":2495,"warcFilename":"x.warc.gz","other":[1]}`,
	}
	require.Empty(t, cmp.Diff(want, got))
	require.True(t, got.Revisit)

	failed, err := ParseLine(`2017-08-03T21:45:24.496Z    -6          0 http://nx.test/ - - unknown - - - - - {"exception":"DNS_failure"}`)
	require.NoError(t, err)
	require.Equal(t, -6, failed.Status)
	require.True(t, failed.FetchStart.IsZero())
	require.Equal(t, "DNS_failure", failed.Exception)
	require.False(t, failed.Revisit)
}

func TestParseLineRejects(t *testing.T) {
	good := `2017-08-03T21:45:24.496Z   200         54 http://e/ - - text/plain - 20170803214523617+365 sha1:X - - {}`
	_, err := ParseLine(good)
	require.NoError(t, err)
	tests := map[string]string{
		"empty":                    "",
		"two lines":                good + "\n" + good,
		"CRLF":                     good + "\r\n",
		"tab":                      strings.Replace(good, " text/plain", "\ttext/plain", 1),
		"bad log time":             strings.Replace(good, "2017-08-03T21", "2017-08-03 21", 1),
		"log time without ms":      strings.Replace(good, ".496Z", "Z", 1),
		"status left-aligned":      strings.Replace(good, "   200 ", " 200   ", 1),
		"status not padded":        strings.Replace(good, "   200 ", " 200 ", 1),
		"status not a number":      strings.Replace(good, "   200 ", "   2x0 ", 1),
		"length not padded":        strings.Replace(good, "         54 ", " 54 ", 1),
		"length with plus":         strings.Replace(good, "         54 ", "        +54 ", 1),
		"missing column":           strings.Replace(good, " - - text/plain", " - text/plain", 1),
		"extra column":             strings.Replace(good, " {}", " - {}", 1),
		"double space":             strings.Replace(good, " text/plain", "  text/plain", 1),
		"trailing space":           good + " ",
		"fetch time short":         strings.Replace(good, "20170803214523617+365", "2017080321452361+365", 1),
		"fetch time without plus":  strings.Replace(good, "20170803214523617+365", "20170803214523617", 1),
		"fetch duration 2 digits":  strings.Replace(good, "+365", "+36", 1),
		"fetch duration negative":  strings.Replace(good, "+365", "+-365", 1),
		"fetch time invalid":       strings.Replace(good, "20170803214523617", "20171303214523617", 1),
		"extra not an object":      strings.Replace(good, " {}", " []", 1),
		"extra invalid":            strings.Replace(good, " {}", ` {"a":}`, 1),
		"extra wrong type":         strings.Replace(good, " {}", ` {"contentSize":"5"}`, 1),
		"extra with a space":       strings.Replace(good, " {}", ` {"a": 1}`, 1),
		"only the padded columns":  "2017-08-03T21:45:24.496Z   200         54",
		"status missing its space": "2017-08-03T21:45:24.496Z   200",
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseLine(s)
			require.Error(t, err, "%q", s)
		})
	}
}

func TestReadLines(t *testing.T) {
	a := string(appendLine(nil, &Entry{URL: "http://a/", Status: 200}, logged))
	b := string(appendLine(nil, &Entry{URL: "http://b/", Status: -2}, logged))

	lines, err := ReadLines(strings.NewReader(a + b))
	require.NoError(t, err)
	require.Equal(t, []string{"http://a/", "http://b/"}, urls(lines))

	lines, err = ReadLines(strings.NewReader(""))
	require.NoError(t, err)
	require.Empty(t, lines)

	_, err = ReadLines(strings.NewReader(a + b[:40]))
	require.ErrorContains(t, err, "line 2: no final newline")

	_, err = ReadLines(strings.NewReader(a + "garbage\n" + b))
	require.ErrorContains(t, err, "line 2:")
}

// FuzzLine feeds arbitrary text into every free-form field: the line must
// stay one line of 13 whitespace-separated columns that ParseLine reads
// back with the same values.
func FuzzLine(f *testing.F) {
	for _, tt := range lineCases {
		f.Add(tt.e.URL, tt.e.Referer, tt.e.MIMEType, string(tt.e.Metadata), tt.e.Exception, tt.e.ExceptionMessage,
			tt.e.WARCFilename, tt.e.Method, tt.e.PayloadDigest, tt.e.Prefix, int64(tt.e.Status), tt.e.ContentLength)
	}
	f.Add("http://a b/\n", "\x00\xff", "\u2028", `{"seed":"\u0085"}`, "e\r", "m\x7f", "w\u00a0", "M\t", "d ", "p", int64(-9), int64(-1))
	f.Fuzz(func(t *testing.T, url, referer, mime, meta, exc, msg, warc, method, digest, prefix string, status, length int64) {
		e := Entry{
			Logged: logged, Status: int(status), ContentLength: length, URL: url, Referer: referer, MIMEType: mime,
			FetchStart: fetchStart, FetchDuration: time.Duration(length), Metadata: json.RawMessage(meta),
			Exception: exc, ExceptionMessage: msg, WARCFilename: warc, WARCOffset: length, Method: method,
			PayloadDigest: digest, Prefix: prefix, ContentSize: length,
		}
		line := string(appendLine(nil, &e, time.Time{}))
		if !utf8.ValidString(line) {
			t.Fatalf("line is not valid UTF-8: %q", line)
		}
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
			t.Fatalf("not one line: %q", line)
		}
		if n := len(strings.Fields(line)); n != 13 {
			t.Fatalf("%d fields in %q", n, line)
		}
		l, err := ParseLine(line)
		if err != nil {
			t.Fatalf("ParseLine(%q): %v", line, err)
		}
		if l.Status != e.Status || l.ContentLength != e.ContentLength {
			t.Fatalf("status/length %d %d, want %d %d", l.Status, l.ContentLength, e.Status, e.ContentLength)
		}
		if !l.Logged.Equal(logged.Truncate(time.Millisecond)) || !l.FetchStart.Equal(fetchStart.Truncate(time.Millisecond)) {
			t.Fatalf("times %v %v", l.Logged, l.FetchStart)
		}
		if want := runes(e.WARCFilename); l.WARCFilename != want {
			t.Fatalf("warcFilename %q, want %q", l.WARCFilename, want)
		}
		if e.Exception != "" {
			want := runes(strings.ReplaceAll(e.Exception, " ", "_"))
			if l.Exception != want {
				t.Fatalf("exception %q, want %q", l.Exception, want)
			}
		}
		if e.Method != "" && e.Method != "GET" && l.Method != runes(e.Method) {
			t.Fatalf("method %q, want %q", l.Method, e.Method)
		}
		plain := utf8.ValidString(e.URL) && !strings.ContainsFunc(e.URL, func(r rune) bool {
			return unicode.IsSpace(r) || unicode.IsControl(r)
		})
		if e.URL != "" && plain && l.URL != e.URL {
			t.Fatalf("URL %q, want %q", l.URL, e.URL)
		}
	})
}

// FuzzParseLine checks ParseLine does not panic and that what it accepts
// has the shape Logger writes.
func FuzzParseLine(f *testing.F) {
	for _, tt := range lineCases {
		f.Add(tt.want)
	}
	f.Add("2017-08-03T21:45:24.496Z 123456 12345678901 a b c d e f g h i {}")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLine(s)
		if err != nil {
			return
		}
		if l.URL == "" || l.Extra == "" || strings.ContainsAny(l.URL+l.Seed+l.Via, " \n") {
			t.Fatalf("accepted %q as %+v", s, l)
		}
	})
}

// runes is s with each invalid UTF-8 byte replaced by U+FFFD, as ranging
// over it yields.
func runes(s string) string { return string([]rune(s)) }
