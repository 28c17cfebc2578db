package stats

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// linearSetMax is the most names looked through one by one for a
// duplicate; past it a map is used. A Warcprox-Meta header may name
// hundreds of thousands of buckets, and comparing each with all before it
// held a core for minutes.
const linearSetMax = 32

// defaultBuckets are the buckets of a capture whose request names none.
var defaultBuckets = []string{AllBucket, UnspecifiedBucket}

// Buckets lists the buckets a capture of targetURL counts in, as warcprox's
// unravel_buckets does: "__all__" first, then the buckets m names in order
// ("__unspecified__" when m is nil or names none; an explicit empty list
// adds nothing), each followed by "name:domain" for every tally-domain the
// URL's host is or is a subdomain of. Domains and the host are normalised
// with NormalizeHost; an IP address matches only itself. The result may be
// shared between calls: do not modify it.
//
// Unlike warcprox, a bucket named twice is listed (and so counted) once,
// and empty or over-long names (see MaxNameLen) are left out.
func Buckets(targetURL string, m *warcproxmeta.Meta) []string {
	if m == nil || !m.HasStatsBuckets {
		// Most requests: no stats buckets named. One shared slice.
		return defaultBuckets
	}
	list := m.StatsBuckets()
	out := make([]string, 1, 1+len(list))
	out[0] = AllBucket
	var seen seenNames
	seen.seen(AllBucket)
	add := func(name string) {
		if validName(name) && !seen.seen(name) {
			out = append(out, name)
		}
	}
	host, hostDone := "", false
	for _, b := range list {
		add(b.Name)
		if len(b.TallyDomains) == 0 {
			continue
		}
		if !hostDone {
			host, hostDone = NormalizeHost(urlHost(targetURL)), true
		}
		if host == "" {
			continue
		}
		for _, d := range b.TallyDomains {
			d = NormalizeHost(d)
			if d != "" && warcproxmeta.HostMatchesDomain(host, d) {
				add(b.Name + ":" + d)
			}
		}
	}
	return out
}

// LimitBucket returns the bucket a limit is about and the key to echo back
// in "reached-limit" / "reached-soft-limit", as warcprox's _enforce_limit
// does: when the limit's bucket holds a colon, the part after the first
// colon is a domain and is normalised with NormalizeHost
// ("job1:FOO.com./total/urls" -> bucket "job1:foo.com", key
// "job1:foo.com/total/urls"); otherwise both are as given.
func LimitBucket(l warcproxmeta.Limit) (bucket, key string) {
	name, domain, ok := strings.Cut(l.Bucket, ":")
	if !ok {
		return l.Bucket, l.Key
	}
	bucket = name + ":" + NormalizeHost(domain)
	return bucket, bucket + "/" + l.Category + "/" + l.Stat
}

// urlHost returns the host of an absolute URL (without userinfo and port;
// an IPv6 address keeps its brackets), or "" when it has none.
func urlHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	} else if i := strings.IndexByte(u, ':'); i >= 0 && !strings.ContainsAny(u[:i], "/?#.") {
		u = strings.TrimLeft(u[i+1:], "/") // "http:/host" and other oddities
	}
	if i := strings.IndexAny(u, `/?#\`); i >= 0 {
		u = u[:i]
	}
	if i := strings.LastIndexByte(u, '@'); i >= 0 {
		u = u[i+1:]
	}
	if strings.HasPrefix(u, "[") {
		if i := strings.IndexByte(u, ']'); i >= 0 {
			return u[:i+1]
		}
		return u
	}
	if i := strings.LastIndexByte(u, ':'); i >= 0 {
		u = u[:i]
	}
	return u
}

// NormalizeHost normalises a host name or domain as urlcanon's
// normalize_host (used by warcprox for tally-domains and limits):
// percent-escapes decoded, IPv6 addresses compressed and bracketed,
// leading, trailing and repeated dots removed, IPv4 addresses in any form
// browsers accept ("0x7f.1") written as dotted decimal, otherwise IDNA
// (UTS #46, non-transitional) to lower-case ASCII, so "Bücher.Example." and
// "xn--bcher-kva.example" are the same. Labels IDNA rejects are lower-cased
// and kept; bytes that cannot appear in a host are percent-encoded.
func NormalizeHost(h string) string {
	h = pctDecode(h)
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		if a, err := netip.ParseAddr(h[1 : len(h)-1]); err == nil && a.Is6() {
			return "[" + a.String() + "]"
		}
		return pctEncodeHost(strings.ToLower(h))
	}
	if strings.Contains(h, ":") {
		// A bare IPv6 address; urlcanon would keep it unbracketed, which
		// never matches a URL's (bracketed) host.
		if a, err := netip.ParseAddr(h); err == nil && a.Is6() {
			return "[" + a.String() + "]"
		}
	}
	h = fixDots(h)
	if h == "" {
		return ""
	}
	if ip, ok := parseIPv4(h); ok {
		return ip
	}
	if isASCII(h) {
		// What IDNA makes of ASCII: UTS #46 maps upper case to lower and
		// keeps the rest (TestASCIIShortcut checks this).
		return pctEncodeHost(strings.ToLower(h))
	}
	return pctEncodeHost(fixDots(toASCII(h)))
}

// toASCII applies IDNA (UTS #46 mapping, non-transitional, without the
// STD3 rules so that "_" passes, as browsers allow) label by label; a
// label it rejects (or would empty, like "xn--") is lower-cased as it is.
func toASCII(h string) string {
	p := idna.New(idna.MapForLookup(), idna.StrictDomainName(false), idna.Transitional(false))
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if a, err := p.ToASCII(l); err == nil && (a != "" || l == "") {
			labels[i] = a
		} else {
			labels[i] = strings.ToLower(l)
		}
	}
	return strings.Join(labels, ".")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// fixDots removes leading and trailing dots and collapses runs of dots.
func fixDots(h string) string {
	h = strings.Trim(h, ".")
	if !strings.Contains(h, "..") {
		return h
	}
	var b strings.Builder
	b.Grow(len(h))
	for i := 0; i < len(h); i++ {
		if h[i] == '.' && i > 0 && h[i-1] == '.' {
			continue
		}
		b.WriteByte(h[i])
	}
	return b.String()
}

// parseIPv4 parses a host as the WHATWG URL standard (and urlcanon) parse
// IPv4 addresses: up to four dot-separated numbers, each decimal, octal
// (leading 0) or hex (0x), the last one filling the remaining bytes.
func parseIPv4(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return "", false
		}
		nums[i] = n
	}
	if nums[0] >= 1<<32 {
		return "", false
	}
	var v uint64
	switch len(nums) {
	case 1:
		v = nums[0]
	case 2:
		if nums[1] >= 1<<24 {
			return "", false
		}
		v = nums[0]<<24 + nums[1]
	case 3:
		if nums[1] > 255 || nums[2] >= 1<<16 {
			return "", false
		}
		v = nums[0]<<24 + nums[1]<<16 + nums[2]
	case 4:
		if nums[1] > 255 || nums[2] > 255 || nums[3] > 255 {
			return "", false
		}
		v = nums[0]<<24 + nums[1]<<16 + nums[2]<<8 + nums[3]
	}
	if v >= 1<<32 {
		return "", false
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String(), true
}

func parseIPv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false // urlcanon reads 0 ("..." would be 0.0.0.0); WHATWG fails
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			if base != 16 || !isHex(c) {
				return 0, false
			}
		}
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// pctDecode decodes %XX escapes until none is left, as urlcanon does;
// malformed escapes stay.
func pctDecode(s string) string {
	for strings.Contains(s, "%") {
		var b strings.Builder
		changed := false
		for i := 0; i < len(s); i++ {
			if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
				i += 2
				changed = true
				continue
			}
			b.WriteByte(s[i])
		}
		if !changed {
			return s
		}
		s = b.String()
	}
	return s
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// pctEncodeHost escapes control bytes, space, non-ASCII bytes, "#" and "%"
// (urlcanon's host encoding), with upper-case hex.
func pctEncodeHost(s string) string {
	const hex = "0123456789ABCDEF"
	need := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || c == '#' || c == '%' {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f || c == '#' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// seenNames tells a name seen before from a new one: through the names
// themselves while they are few (a request names one to three buckets;
// kept in an array, so that a Tally allocates nothing for it), through a
// map past linearSetMax, so that a header naming 100,000 buckets costs
// linear time rather than quadratic.
type seenNames struct {
	few [linearSetMax]string
	n   int
	set map[string]struct{}
}

// seen reports whether name was seen before, and notes it.
func (s *seenNames) seen(name string) bool {
	if s.set != nil {
		if _, ok := s.set[name]; ok {
			return true
		}
		s.set[name] = struct{}{}
		return false
	}
	if slices.Contains(s.few[:s.n], name) {
		return true
	}
	if s.n < len(s.few) {
		s.few[s.n] = name
		s.n++
		return false
	}
	s.set = make(map[string]struct{}, 4*len(s.few))
	for _, n := range s.few {
		s.set[n] = struct{}{}
	}
	s.set[name] = struct{}{}
	return false
}
