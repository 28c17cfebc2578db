package config

import (
	"errors"
	"net"
	"net/url"
	"strconv"
)

// validateRoutes checks the upstream route: a SOCKS5 proxy or a parent
// HTTP proxy (not both: a connection takes one way out), and Tor's SOCKS
// proxy for .onion hosts. Messages never repeat a password.
func (c Config) validateRoutes(p *problems) {
	checkHostPort(p, "socks-proxy", c.SOCKSProxy)
	checkHostPort(p, "onion-tor-socks-proxy", c.OnionTorSOCKSProxy)
	if c.SOCKSProxy == "" && (c.SOCKSProxyUsername != "" || c.SOCKSProxyPassword != "") {
		p.bad("socks-proxy-username", "and --socks-proxy-password need --socks-proxy")
	}
	c.validateSOCKSCredentials(p)
	if c.UpstreamProxy != "" {
		if _, err := c.Parent(); err != nil {
			p.bad("upstream-proxy", "%v", err)
		}
	}
	if c.SOCKSProxy != "" && c.UpstreamProxy != "" {
		p.bad("socks-proxy", "cannot be combined with --upstream-proxy: give one route (a parent proxy can itself use a SOCKS proxy)")
	}
}

// validateSOCKSCredentials applies RFC 1929's limits, which the SOCKS
// handshake would otherwise only hit at the first request: a username of
// 1 to 255 bytes, a password of at most 255.
func (c Config) validateSOCKSCredentials(p *problems) {
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

func checkHostPort(p *problems, flag, v string) {
	if v == "" {
		return
	}
	host, port, err := net.SplitHostPort(v)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		p.bad(flag, "%q: want host:port, e.g. 127.0.0.1:1080", v)
	}
}

// ParentProxy is --upstream-proxy taken apart.
type ParentProxy struct {
	Addr     string // host:port
	User     string
	Password string
}

// Parent parses --upstream-proxy. Its errors never quote the URL, which
// may hold a password.
func (c Config) Parent() (ParentProxy, error) {
	want := errors.New("want http://[user:password@]host:port")
	u, err := url.Parse(c.UpstreamProxy)
	if err != nil {
		return ParentProxy{}, want
	}
	if u.Scheme != "http" {
		return ParentProxy{}, errors.New("only http:// parent proxies are supported (" + want.Error() + ")")
	}
	if u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ParentProxy{}, want
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return ParentProxy{}, want
	}
	pp := ParentProxy{Addr: u.Host}
	if u.User != nil {
		pp.User = u.User.Username()
		pp.Password, _ = u.User.Password()
	}
	return pp, nil
}
