package crawllog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/warcproxy/warcproxy/internal/jsonstr"
)

const (
	logTimeLayout   = "2006-01-02T15:04:05.000Z"
	fetchTimeLayout = "20060102150405" // then milliseconds, without a dot
	revisitNote     = "duplicate:digest"
)

// appendLine appends e's line, "\n" included, to b; now stands in for a
// zero e.Logged.
func appendLine(b []byte, e *Entry, now time.Time) []byte {
	logged := e.Logged
	if logged.IsZero() {
		logged = now
	}
	b = logged.UTC().AppendFormat(b, logTimeLayout)
	b = append(b, ' ')
	b = appendPadded(b, int64(e.Status), 5)
	b = append(b, ' ')
	b = appendPadded(b, e.ContentLength, 10)
	b = append(b, ' ')
	b = appendField(b, e.URL)

	meta := parseMetadata(e.Metadata)
	hop, via := e.HopPath, e.Via
	if hop == "" || via == "" {
		h, v := hopAndVia(e.URL, e.Referer, &meta)
		if hop == "" {
			hop = h
		}
		if via == "" {
			via = v
		}
	}
	b = append(b, ' ')
	b = appendField(b, hop)
	b = append(b, ' ')
	b = appendField(b, via)
	b = append(b, ' ')
	b = appendField(b, mimeType(e.MIMEType))
	b = append(b, " - "...)
	b = appendFetchTime(b, e.FetchStart, e.FetchDuration)
	b = append(b, ' ')
	b = appendField(b, e.PayloadDigest)
	b = append(b, ' ')
	b = appendField(b, meta.seed)
	b = append(b, ' ')
	if e.Revisit {
		b = append(b, revisitNote...)
	} else {
		b = append(b, '-')
	}
	b = append(b, ' ')
	b = appendExtra(b, e)
	return append(b, '\n')
}

// appendPadded right-aligns n in width columns, like Python's '% 5s'.
func appendPadded(b []byte, n int64, width int) []byte {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// mimeType drops parameters and blanks as warcprox does (it cuts at ";"
// and writes "unknown" for an empty or blank type).
func mimeType(s string) string {
	s, _, _ = strings.Cut(s, ";")
	if strings.TrimSpace(s) == "" {
		return "unknown"
	}
	return s
}

// appendFetchTime writes "{start:17 digits}+{duration ms, at least 3
// digits}". warcprox prints only the sub-second part of the duration
// (timedelta.microseconds), so a 1.5 s fetch reads "+500" there; this
// prints the whole duration, as Heritrix does ("+1500").
func appendFetchTime(b []byte, start time.Time, d time.Duration) []byte {
	if start.IsZero() {
		return append(b, '-')
	}
	start = start.UTC()
	b = start.AppendFormat(b, fetchTimeLayout)
	b = appendZeroPadded(b, int64(start.Nanosecond()/int(time.Millisecond)), 3)
	b = append(b, '+')
	return appendZeroPadded(b, max(d.Milliseconds(), 0), 3)
}

func appendZeroPadded(b []byte, n int64, width int) []byte {
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendField writes a text column: "-" for "", and whitespace, control
// characters and invalid UTF-8 as %XX so the column stays one field.
func appendField(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c > ' ' && c < utf8.RuneSelf && c != 0x7f {
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || unicode.IsSpace(r) || unicode.IsControl(r) {
			for j := range size {
				b = appendPercent(b, s[i+j])
			}
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

const upperHex = "0123456789ABCDEF"

func appendPercent(b []byte, c byte) []byte {
	return append(b, '%', upperHex[c>>4], upperHex[c&15])
}

// appendExtra writes the extra-info JSON object with warcprox's keys, in
// its order.
func appendExtra(b []byte, e *Entry) []byte {
	b = append(b, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	if e.ContentSize > 0 {
		key("contentSize")
		b = strconv.AppendInt(b, e.ContentSize, 10)
	}
	if e.Exception != "" {
		key("exception")
		b = appendJSONString(b, strings.ReplaceAll(e.Exception, " ", "_"))
		if e.ExceptionMessage != "" {
			key("exceptionMessage")
			b = appendJSONString(b, strings.ReplaceAll(e.ExceptionMessage, " ", "_"))
		}
	}
	if e.WARCFilename != "" {
		key("warcFilename")
		b = appendJSONString(b, e.WARCFilename)
		key("warcFileOffset")
		b = strconv.AppendInt(b, e.WARCOffset, 10)
	}
	if e.Method != "" && e.Method != "GET" {
		key("method")
		b = appendJSONString(b, e.Method)
	}
	return append(b, '}')
}

// appendJSONString quotes s the way Python's json.dumps does by default
// (ensure_ascii: everything outside printable ASCII as \uXXXX, lowercase
// hex, surrogate pairs above U+FFFF) and escapes the space too, so the
// object holds no whitespace. Invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		if r < 0x7f && r != ' ' { // the space too: a crawl log line splits on it
			b = jsonstr.AppendASCII(b, byte(r))
		} else {
			b = jsonstr.AppendU(b, r)
		}
	}
	return append(b, '"')
}

// metadata holds the members of Warcprox-Meta "metadata" the crawl log
// uses; has* tell a member that is absent (or null) from an empty string.
type metadata struct {
	seed, hopPath, brozzledURL, hopViaURL    string
	hasHopPath, hasBrozzledURL, hasHopViaURL bool
}

// parseMetadata reads the crawl log's members of a metadata object. Input
// that is not a JSON object yields no members: the proxy has validated the
// header before, and a line is better than none.
func parseMetadata(raw json.RawMessage) metadata {
	var m metadata
	if len(raw) == 0 {
		return m
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return m
	}
	m.seed, _ = metaString(obj["seed"])
	m.hopPath, m.hasHopPath = metaString(obj["hop_path"])
	m.brozzledURL, m.hasBrozzledURL = metaString(obj["brozzled_url"])
	m.hopViaURL, m.hasHopViaURL = metaString(obj["hop_via_url"])
	return m
}

// metaString returns a JSON string's value, a non-string's compact JSON
// text, and false for an absent member or null.
func metaString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw), true
	}
	return buf.String(), true
}

// hopAndVia computes the hop path and via columns as warcprox does:
//   - without hop_path, brozzled_url and hop_via_url: "-" and the Referer;
//   - otherwise the hop_path ("-" without one) and, when there is a hop
//     path, the Referer or else hop_via_url;
//   - and when brozzled_url is given and differs from the URL (an embed or
//     redirect of the brozzled page), a "B" hop appended and the brozzled
//     page as via.
//
// brozzled_url and hop_via_url are canonicalized first (IDNA host,
// percent-encoded path), since the URL they are compared with came over
// HTTP in that form.
func hopAndVia(url, referer string, m *metadata) (hop, via string) {
	if !m.hasHopPath && !m.hasBrozzledURL && !m.hasHopViaURL {
		return "-", referer
	}
	hop = "-"
	if m.hasHopPath {
		hop = m.hopPath
	}
	hopVia := "-"
	if m.hasHopViaURL {
		hopVia = canonicalizeURL(m.hopViaURL)
	}
	via = "-"
	if hop != "-" {
		via = referer
		if via == "" {
			via = hopVia
		}
	}
	if m.hasBrozzledURL {
		if brozzled := canonicalizeURL(m.brozzledURL); brozzled != url {
			via = brozzled
			if hop == "-" {
				hop = "B"
			} else {
				hop += "B"
			}
		}
	}
	return hop, via
}
