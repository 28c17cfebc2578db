package crawllog

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// idnaProfile maps and punycodes one non-ASCII host label. Like Python's
// "idna" codec (IDNA 2003, which warcprox uses) it maps case and width and
// is transitional (ß becomes ss), and it does not apply the STD3 ASCII
// rules, so labels with "_" pass.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(true),
	idna.StrictDomainName(false),
)

// canonicalizeURL brings a URL from Warcprox-Meta metadata into the form a
// client sends over HTTP, as warcprox's canonicalize_url (rfc3986 and
// Python's idna codec) does: the host IDNA-encoded and lowercased, the
// userinfo's %xx uppercased, the port without leading zeros, and the path,
// query and fragment percent-encoded (as UTF-8 bytes, keeping reserved and
// unreserved characters, and keeping "%" when every "%" already starts a
// %XX). A URL without a host, or one whose host or port cannot be encoded,
// comes back unchanged.
func canonicalizeURL(s string) string {
	if s == "" || s == "-" {
		return s
	}
	if c, ok := canonicalize(s); ok {
		return c
	}
	return s
}

func canonicalize(s string) (string, bool) {
	scheme, rest := splitScheme(s)
	if !strings.HasPrefix(rest, "//") {
		return "", false
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	if authority == "" {
		return "", false
	}
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	path, query, hasQuery := strings.Cut(rest, "?")

	userinfo, hasUserinfo, host, port := splitAuthority(authority)
	if host == "" {
		return "", false
	}
	host, ok := idnaHost(host)
	if !ok {
		return "", false
	}
	portNum := 0
	if port != "" {
		for i := 0; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return "", false
			}
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return "", false
		}
		portNum = n
	}

	b := make([]byte, 0, len(s)+16)
	if scheme != "" {
		b = append(b, scheme...)
		b = append(b, ':')
	}
	b = append(b, '/', '/')
	if hasUserinfo && userinfo != "" {
		b = appendUpperPercent(b, userinfo)
		b = append(b, '@')
	}
	b = append(b, normalizeHost(host)...)
	if portNum != 0 { // rfc3986 drops a port that is 0, like an empty one
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(portNum), 10)
	}
	b = appendEncodedComponent(b, path)
	if hasQuery {
		b = append(b, '?')
		b = appendEncodedComponent(b, query)
	}
	if hasFragment {
		b = append(b, '#')
		b = appendEncodedComponent(b, fragment)
	}
	return string(b), true
}

// splitScheme splits off a leading "scheme:" (a letter, then letters,
// digits, "+", "-", "."); without one scheme is "".
func splitScheme(s string) (scheme, rest string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:]
		default:
			return "", s
		}
	}
	return "", s
}

// splitAuthority splits "userinfo@host:port" as rfc3986 does: userinfo
// before the last "@", a bracketed IPv6 host, the port after the first ":"
// that follows the host.
func splitAuthority(a string) (userinfo string, hasUserinfo bool, host, port string) {
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		userinfo, hasUserinfo, a = a[:i], true, a[i+1:]
	}
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i >= 0 {
			host, a = a[:i+1], a[i+1:]
			_, port, _ = strings.Cut(a, ":")
			return userinfo, hasUserinfo, host, port
		}
	}
	host, port, _ = strings.Cut(a, ":")
	return userinfo, hasUserinfo, host, port
}

// idnaHost encodes host as Python's idna codec does: an ASCII host is kept
// if its labels are 1 to 63 bytes long (the last may be empty); otherwise
// each label (split at any IDNA dot) is mapped and punycoded.
func idnaHost(host string) (string, bool) {
	if isASCII(host) {
		labels := strings.Split(host, ".")
		for i, l := range labels {
			if len(l) > 63 || (len(l) == 0 && i < len(labels)-1) {
				return "", false
			}
		}
		return host, true
	}
	labels := splitIDNADots(host)
	trailingDot := false
	if n := len(labels); n > 0 && labels[n-1] == "" {
		trailingDot, labels = true, labels[:n-1]
	}
	out := make([]byte, 0, len(host)+16)
	for i, l := range labels {
		if !isASCII(l) {
			a, err := idnaProfile.ToASCII(l)
			if err != nil {
				return "", false
			}
			l = a
		}
		if len(l) == 0 || len(l) > 63 {
			return "", false
		}
		if i > 0 {
			out = append(out, '.')
		}
		out = append(out, l...)
	}
	if trailingDot {
		out = append(out, '.')
	}
	return string(out), true
}

// splitIDNADots splits at ".", "。", "．" and "｡".
func splitIDNADots(s string) []string {
	var labels []string
	start := 0
	for i, r := range s {
		switch r {
		case '.', '\u3002', '\uff0e', '\uff61':
			labels = append(labels, s[start:i])
			start = i + utf8.RuneLen(r)
		}
	}
	return append(labels, s[start:])
}

// normalizeHost lowercases a host; in a bracketed IPv6 host with a zone
// ("%"), only the address part, and the zone delimiter becomes "%25" (RFC
// 6874) unless it already is.
func normalizeHost(h string) string {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		if p := strings.IndexByte(h, '%'); p >= 0 {
			p25 := strings.Index(h, "%25")
			if p25 == -1 || p < p25 || (p == p25 && p25 == len(h)-4) {
				h = h[:p] + "%25" + h[p+1:]
			}
			return strings.ToLower(h[:p]) + h[p:]
		}
	}
	return strings.ToLower(h)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// appendUpperPercent uppercases the hex digits of every %xx in s.
func appendUpperPercent(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, '%', upper(s[i+1]), upper(s[i+2]))
			i += 2
			continue
		}
		b = append(b, c)
	}
	return b
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

// keep is what rfc3986's encode_component leaves as is: reserved and
// unreserved characters.
var keep = func() (t [128]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" +
		"-._~" + ":/?#[]@" + "!$&'()*+,;=" {
		t[c] = true
	}
	return t
}()

// appendEncodedComponent percent-encodes a path, query or fragment like
// rfc3986's encode_component: every byte but reserved and unreserved ASCII
// becomes %XX; "%" is kept when every "%" in s starts a %XX, else encoded.
func appendEncodedComponent(b []byte, s string) []byte {
	pcts, encoded := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			pcts++
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				encoded++
			}
		}
	}
	keepPct := pcts == encoded
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == '%' && keepPct) || (c < utf8.RuneSelf && keep[c]) {
			b = append(b, c)
		} else {
			b = appendPercent(b, c)
		}
	}
	return b
}
