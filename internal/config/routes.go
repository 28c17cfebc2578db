package config

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// validateRoutes checks the upstream route: a SOCKS5 proxy or a parent
// HTTP proxy (not both: a connection takes one way out), and Tor's SOCKS
// proxy for .onion hosts. Messages never repeat a password.
func (c Config) validateRoutes(p *problems) {
	checkHostPort(p, "socks-proxy", c.SOCKSProxy, "127.0.0.1:1080",
		": give them with --socks-proxy-username and --socks-proxy-password")
	checkHostPort(p, "onion-tor-socks-proxy", c.OnionTorSOCKSProxy, "127.0.0.1:9050", "")
	if c.SOCKSProxy == "" {
		c.socksCredentialsWithoutProxy(p)
	} else {
		c.socksCredentialLimits(p)
	}
	if c.UpstreamProxy != "" {
		if _, err := c.Parent(); err != nil {
			p.bad("upstream-proxy", "%v", err)
		}
	}
	if c.SOCKSProxy != "" && c.UpstreamProxy != "" {
		p.bad("socks-proxy", "cannot be combined with --upstream-proxy: give one route (a parent proxy can itself use a SOCKS proxy)")
	}
}

// socksCredentialLimits applies RFC 1929's limits, which the SOCKS
// handshake would otherwise only hit at the first request: a username of
// 1 to 255 bytes, a password of at most 255.
func (c Config) socksCredentialLimits(p *problems) {
	const most = 255
	if n := len(c.SOCKSProxyUsername); n > most {
		p.bad("socks-proxy-username", "is %d bytes long: SOCKS5 allows at most %d (RFC 1929)", n, most)
	}
	if n := len(c.SOCKSProxyPassword); n > most {
		p.bad("socks-proxy-password", "is %d bytes long: SOCKS5 allows at most %d (RFC 1929)", n, most)
	}
	if c.SOCKSProxyUsername == "" && c.SOCKSProxyPassword != "" {
		p.bad("socks-proxy-password", "needs --socks-proxy-username: SOCKS5 has no password-only authentication (RFC 1929)")
	}
}

// socksCredentialsWithoutProxy refuses credential flags given without
// --socks-proxy, naming those that were given, and only those.
func (c Config) socksCredentialsWithoutProxy(p *problems) {
	switch user, pass := c.SOCKSProxyUsername != "", c.SOCKSProxyPassword != ""; {
	case user && pass:
		p.badTogether("--socks-proxy-username and --socks-proxy-password need --socks-proxy")
	case user:
		p.bad("socks-proxy-username", "needs --socks-proxy")
	case pass:
		p.bad("socks-proxy-password", "needs --socks-proxy")
	}
}

// checkHostPort refuses a v that is not host:port. A value with a scheme
// or an '@' (socks5://user:password@host:port, a habit from curl and
// warcprox) is not quoted, since it may hold a password; credentials says
// where they go instead, if anywhere.
func checkHostPort(p *problems, flag, v, example, credentials string) {
	if v == "" {
		return
	}
	if strings.Contains(v, "@") || strings.Contains(v, "://") {
		p.bad(flag, "want host:port, e.g. %s; no scheme or credentials here%s", example, credentials)
		return
	}
	host, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		p.bad(flag, "%q: want host:port, e.g. %s", v, example)
	}
}

// ParentProxy is --upstream-proxy taken apart.
type ParentProxy struct {
	Addr     string // host:port
	User     string
	Password string
}

// Parent parses --upstream-proxy. Its errors say what is wrong but never
// quote the URL or a part of it: it may hold a password.
func (c Config) Parent() (ParentProxy, error) {
	u, err := url.Parse(c.UpstreamProxy)
	if err != nil {
		return ParentProxy{}, parentError("not a URL")
	}
	if u.Scheme != "http" {
		return ParentProxy{}, parentError("only http:// parent proxies are supported")
	}
	if problem := parentURLProblem(u); problem != "" {
		return ParentProxy{}, parentError(problem)
	}
	pp := ParentProxy{Addr: u.Host}
	if u.User != nil {
		pp.User = u.User.Username()
		pp.Password, _ = u.User.Password()
	}
	return pp, nil
}

// parentURLProblem says what keeps an http:// URL from naming a parent
// proxy, or "".
func parentURLProblem(u *url.URL) string {
	switch {
	case u.Opaque != "" || u.Hostname() == "":
		return "no host"
	case u.Port() == "":
		return "no port (a parent proxy has no default one)"
	case u.Path != "" && u.Path != "/":
		return "a path is not allowed"
	case u.RawQuery != "" || u.ForceQuery:
		return "a query is not allowed"
	case u.Fragment != "":
		return "a fragment is not allowed"
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return "the port must be a number from 1 to 65535"
	}
	return ""
}

func parentError(problem string) error {
	return errors.New(problem + " (want http://[user:password@]host:port)")
}
