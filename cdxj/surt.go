package cdxj

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

var wwwPrefix = regexp.MustCompile(`^(https?://)www\d*\.`)

// SURT returns the urlkey warcio.js (getSurt) computes for url, which pywb
// and ReplayWeb.page look captures up by:
//
//   - only URLs starting with lower-case "http:" or "https:" are
//     transformed; any other string (including "HTTP://...") is returned
//     as it is;
//   - a "www", "www1", "www2"... label at the start of the host is dropped
//     (before lower-casing, so "http://WWW.x/" keeps it);
//   - the whole URL is lower-cased (path and query too) and parsed as a
//     WHATWG URL: default ports dropped, dot segments resolved, characters
//     percent-encoded as browsers do, IDN hosts in punycode, IPv4 hosts
//     normalised;
//   - the host labels are reversed and joined with commas (IPv4 addresses
//     too, "1,0,0,127"; an IPv6 host stays "[::1]"; a trailing dot gives a
//     leading comma), then ":port" if not the default, then ")" and the
//     path;
//   - the query is split at "&", the parts sorted by UTF-16 code units and
//     joined again; an empty query and the fragment are dropped;
//   - a URL that does not parse is returned as it is (less the www).
func SURT(url string) string {
	if !strings.HasPrefix(url, "https:") && !strings.HasPrefix(url, "http:") {
		return url
	}
	url = wwwPrefix.ReplaceAllString(url, "$1")
	u, err := whatwg.Parse(jsToLower(url))
	if err != nil {
		return url
	}
	host := u.Hostname()
	labels := strings.Split(host, ".")
	slices.Reverse(labels)
	var b strings.Builder
	b.WriteString(strings.Join(labels, ","))
	if p := u.Port(); p != "" {
		b.WriteString(":")
		b.WriteString(p)
	}
	b.WriteString(")")
	b.WriteString(u.Pathname())
	if q := u.Search(); q != "" {
		args := strings.Split(q[1:], "&")
		slices.SortFunc(args, compareUTF16)
		b.WriteString("?")
		b.WriteString(strings.Join(args, "&"))
	}
	return b.String()
}

// jsToLower is String.prototype.toLowerCase for what differs from
// strings.ToLower in the cases URLs meet: U+0130 becomes "i̇".
func jsToLower(s string) string {
	s = strings.ReplaceAll(s, "\u0130", "i\u0307")
	return strings.ToLower(s)
}

// compareUTF16 orders strings as JavaScript's default sort does: by UTF-16
// code units.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Key(ra), utf16Key(rb)
			if ua < ub {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// utf16Key maps a rune to a value ordered as its first UTF-16 code unit,
// then the rest: characters above the BMP sort between U+D7FF and U+E000.
func utf16Key(r rune) int {
	if r >= 0x10000 {
		hi := 0xd800 + (r-0x10000)>>10
		return int(hi)<<16 | int(0xdc00+(r-0x10000)&0x3ff)
	}
	return int(r) << 16
}
