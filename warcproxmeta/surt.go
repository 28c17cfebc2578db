package warcproxmeta

import (
	"net/netip"
	"path"
	"sort"
	"strings"
)

// URL is a URL canonicalised roughly like urlcanon.semantic, which warcprox
// applies before matching block rules: scheme and host lowercased, host dots
// fixed, userinfo, default port and fragment removed, dot segments resolved,
// repeated slashes collapsed, query parameters sorted. "www." is kept and
// https stays https (semantic is not the aggressive canonicaliser). Not done:
// IDNA, IPv4 shorthand forms, percent-encoding normalisation.
type URL struct {
	Scheme   string
	Host     string
	Port     string // "" for the scheme's default
	Path     string
	HasQuery bool
	Query    string
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// Canonicalize parses and canonicalises raw.
func Canonicalize(raw string) *URL {
	s := strings.Trim(raw, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	u := &URL{Scheme: "http"}
	if i := strings.Index(s, "://"); i > 0 && !strings.ContainsAny(s[:i], "/?#") {
		u.Scheme, s = strings.ToLower(s[:i]), s[i+3:]
	} else {
		s = strings.TrimLeft(s, "/")
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		u.HasQuery, u.Query, s = true, s[i+1:], s[:i]
	}
	s = strings.ReplaceAll(s, `\`, "/")
	authority, p := s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		authority, p = s[:i], s[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host := authority
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, u.Port = authority[:i], authority[i+1:]
	}
	if u.Port == defaultPorts[u.Scheme] {
		u.Port = ""
	}
	host = strings.ToLower(host)
	host = strings.Trim(host, ".")
	for strings.Contains(host, "..") {
		host = strings.ReplaceAll(host, "..", ".")
	}
	u.Host = host
	u.Path = canonPath(p)
	if u.Query != "" {
		params := strings.Split(u.Query, "&")
		sort.Strings(params)
		u.Query = strings.Join(params, "&")
	}
	return u
}

func canonPath(p string) string {
	if p == "" {
		return "/"
	}
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	trailing := strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
	p = path.Clean(p)
	if trailing && p != "/" {
		p += "/"
	}
	return p
}

func (u *URL) hostPort() string {
	if u.Port == "" {
		return u.Host
	}
	return u.Host + ":" + u.Port
}

// String is the canonical URL that substring and regex rules see.
func (u *URL) String() string {
	s := u.Scheme + "://" + u.hostPort() + u.Path
	if u.HasQuery {
		s += "?" + u.Query
	}
	return s
}

func (u *URL) query() string {
	if u.HasQuery {
		return "?" + u.Query
	}
	return ""
}

// SURT is urlcanon's surt(): "http://(com,example,www,:8080)/path?query".
func (u *URL) SURT() string {
	h := ssurtHost(u.Host)
	if u.Port != "" {
		h += ":" + u.Port
	}
	return u.Scheme + "://(" + h + ")" + u.Path + u.query()
}

// SSURT is urlcanon's ssurt(): "com,example,//8080:http:/path?query".
func (u *URL) SSURT() string {
	s := ssurtHost(u.Host) + "//"
	if u.Port != "" {
		s += u.Port + ":"
	}
	return s + u.Scheme + ":" + u.Path + u.query()
}

func isIP(host string) bool {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is4()
}

// ssurtHost reverses a host name ("www.example.com" -> "com,example,www,"),
// leaving IP addresses alone.
func ssurtHost(host string) string {
	if host == "" || isIP(host) {
		return host
	}
	return reverseHost(host)
}

func reverseHost(host string) string {
	parts := strings.Split(host, ".")
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(strings.ReplaceAll(parts[i], ",", "."))
		b.WriteByte(',')
	}
	return b.String()
}

// HostMatchesDomain reports whether host is domain or a subdomain of it;
// IP addresses only match themselves. Like urlcanon, it does not normalise.
func HostMatchesDomain(host, domain string) bool {
	if host == domain {
		return true
	}
	if isIP(host) || isIP(domain) {
		return false
	}
	return strings.HasPrefix(reverseHost(host), reverseHost(domain))
}
