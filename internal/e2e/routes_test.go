package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// startRouted starts a proxy writing plain (uncompressed) WARCs, so that
// a test can grep their bytes for secrets, with the route set by route.
func startRouted(t *testing.T, route func(*config.Config)) *proxytest.Proxy {
	t.Helper()
	return proxytest.StartLogged(t, func(c *config.Config) {
		c.Compression = "none"
		route(c)
	})
}

// fetchThroughRoute fetches each path of the origin, plain and HTTPS,
// and checks the answer and that the origin saw the route's address.
func fetchThroughRoute(t *testing.T, p *proxytest.Proxy, o *routeOrigin, bind string) []string {
	t.Helper()
	c := p.Client()
	var urls []string
	for _, u := range []string{o.plain.URL + "/plain", o.secure.URL + "/secure"} {
		resp, body := fetch(t, c, u, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", u, body)
		path := u[strings.LastIndex(u, "/"):]
		require.Equal(t, "hello from "+path, body)
		require.Equal(t, bind, o.cameFrom(path), "%s reached the origin from the route's address", u)
		urls = append(urls, u)
	}
	return urls
}

// checkRoutedRecords stops the proxy and checks the WARCs: each URL
// recorded once, the request record in origin form without proxy
// credentials, no WARC-IP-Address; and that no secret is anywhere a user
// could read it (WARC bytes, the log, /status).
func checkRoutedRecords(t *testing.T, p *proxytest.Proxy, urls []string, secrets ...string) {
	t.Helper()
	status, err := json.Marshal(p.Status(t))
	require.NoError(t, err)
	p.Stop()
	recs := warccheck.Dir(t, p.Dir)
	byURI := byURIAndType(recs)
	for _, u := range urls {
		require.Len(t, byURI[u]["response"], 1, "%s recorded once", u)
		require.Len(t, byURI[u]["request"], 1, u)
		res, req := byURI[u]["response"][0], byURI[u]["request"][0]
		for _, r := range []warccheck.Record{res, req} {
			_, has := r.Header["WARC-IP-Address"]
			require.False(t, has, "%s %s: no WARC-IP-Address through a route", u, r.Type)
		}
		path := u[strings.LastIndex(u, "/"):]
		require.True(t, strings.HasPrefix(string(req.Block), "GET "+path+" HTTP/1.1\r\n"), "origin-form request record: %q", req.Block)
		require.NotContains(t, strings.ToLower(string(req.Block)), "proxy-authorization")
		require.Contains(t, string(res.Block), "hello from "+path)
	}
	files, err := filepath.Glob(filepath.Join(p.Dir, "*.warc"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	log := p.Log()
	for _, s := range secrets {
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NotContains(t, string(data), s, "secret in %s", f)
		}
		require.NotContains(t, log, s, "secret in the log")
		require.NotContains(t, string(status), s, "secret in /status")
	}
}

// TestSOCKSRoute: with --socks-proxy (microsocks), plain HTTP and CONNECT
// tunnels both leave through the SOCKS server, with and without
// username/password; the settings work from the config file too.
func TestSOCKSRoute(t *testing.T) {
	t.Run("no auth", func(t *testing.T) {
		o := newRouteOrigin(t)
		socks := startMicrosocks(t, "", "")
		p := startRouted(t, func(c *config.Config) { c.SOCKSProxy = socks })
		checkRoutedRecords(t, p, fetchThroughRoute(t, p, o, socksBind))
	})
	t.Run("auth from the config file", func(t *testing.T) {
		o := newRouteOrigin(t)
		const password = "socks-s3cret-pw"
		socks := startMicrosocks(t, "crawler", password)
		file := filepath.Join(t.TempDir(), "warcproxy.yaml")
		yaml := "socks-proxy: " + socks + "\nsocks-proxy-username: crawler\nsocks-proxy-password: " + password + "\n"
		require.NoError(t, os.WriteFile(file, []byte(yaml), 0o600))
		fromFile, err := config.Parse([]string{"--config.file", file}, nil)
		require.NoError(t, err)
		p := startRouted(t, func(c *config.Config) {
			c.SOCKSProxy, c.SOCKSProxyUsername, c.SOCKSProxyPassword = fromFile.SOCKSProxy, fromFile.SOCKSProxyUsername, fromFile.SOCKSProxyPassword
		})
		checkRoutedRecords(t, p, fetchThroughRoute(t, p, o, socksBind), password)
	})
}

// TestParentProxyRoute: with --upstream-proxy (tinyproxy), plain HTTP goes
// to the parent in absolute form and HTTPS through a CONNECT to it; the
// records hold the origin-form request and not the parent's credentials.
func TestParentProxyRoute(t *testing.T) {
	t.Run("no auth", func(t *testing.T) {
		o := newRouteOrigin(t)
		parent := startTinyproxy(t, "", "")
		p := startRouted(t, func(c *config.Config) { c.UpstreamProxy = "http://" + parent })
		checkRoutedRecords(t, p, fetchThroughRoute(t, p, o, parentBind))
	})
	t.Run("auth", func(t *testing.T) {
		o := newRouteOrigin(t)
		const password = "parent-s3cret-pw"
		parent := startTinyproxy(t, "crawler", password)
		p := startRouted(t, func(c *config.Config) { c.UpstreamProxy = "http://crawler:" + password + "@" + parent })
		require.Equal(t, "parent "+parent, p.Status(t)["upstream_route"], "/status names the route, without credentials")
		// Basic credentials travel base64-encoded: look for that form too.
		checkRoutedRecords(t, p, fetchThroughRoute(t, p, o, parentBind), password, "Y3Jhd2xlcjpwYXJlbnQtczNjcmV0LXB3")
	})
}

// TestParentProxyOrigin401: an origin's own 401 through a parent that takes
// the credentials is the origin's answer, relayed and recorded, though some
// parents (tinyproxy) answer wrong credentials with 401 too.
func TestParentProxyOrigin401(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="members"`)
		http.Error(w, "members only", http.StatusUnauthorized)
	}))
	t.Cleanup(origin.Close)
	parent := startTinyproxy(t, "crawler", "right-pw")
	p := startRouted(t, func(c *config.Config) { c.UpstreamProxy = "http://crawler:right-pw@" + parent })
	for _, path := range []string{"/a", "/b"} {
		resp, body := fetch(t, p.Client(), origin.URL+path, "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
		require.Contains(t, body, "members only")
	}
	require.Zero(t, routeErrors(t, p, "parent", "auth"))
	p.Stop()
	var got []string
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" || r.Type == "revisit" { // /b has /a's body
			require.Contains(t, string(r.Block), "401 Unauthorized")
			got = append(got, r.Header["WARC-Target-URI"])
		}
	}
	require.ElementsMatch(t, []string{origin.URL + "/a", origin.URL + "/b"}, got)
}

// TestOnionRoute: .onion hosts go through --onion-tor-socks-proxy with
// their name unresolved, whatever else is set; other hosts take
// --socks-proxy.
func TestOnionRoute(t *testing.T) {
	o := newRouteOrigin(t)
	tor := startNameSOCKS(t, "127.0.0.1")
	socks := startMicrosocks(t, "", "")
	p := startRouted(t, func(c *config.Config) { c.SOCKSProxy, c.OnionTorSOCKSProxy = socks, tor.addr() })
	_, port := splitURLPort(t, o.plain.URL)
	onion := "http://exampleonionsite2x.onion:" + port + "/hidden"
	resp, body := fetch(t, p.Client(), onion, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "hello from /hidden", body)
	require.Equal(t, []string{"exampleonionsite2x.onion"}, tor.requested(), "the name reached the Tor route unresolved")
	require.Equal(t, torBind, o.cameFrom("/hidden"))
	resp, _ = fetch(t, p.Client(), o.plain.URL+"/plain", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, socksBind, o.cameFrom("/plain"), "other hosts take --socks-proxy")
	require.Len(t, tor.requested(), 1)
	checkRoutedRecords(t, p, []string{onion, o.plain.URL + "/plain"})
}

func splitURLPort(t *testing.T, u string) (host, port string) {
	t.Helper()
	hp := u[strings.Index(u, "://")+3:]
	i := strings.LastIndex(hp, ":")
	require.Positive(t, i)
	return hp[:i], hp[i+1:]
}

// TestRouteDenyPrivateTargets: with a route, --deny-private-targets
// refuses private IP literals and names that resolve here to private
// addresses before anything is dialed, and passes names that do not
// resolve here to the route, which resolves them.
func TestRouteDenyPrivateTargets(t *testing.T) {
	o := newRouteOrigin(t)
	socks := startNameSOCKS(t, "127.0.0.1")
	p := proxytest.Start(t, func(c *config.Config) { c.SOCKSProxy, c.DenyPrivateTargets = socks.addr(), true })
	_, port := splitURLPort(t, o.plain.URL)
	for _, u := range []string{"http://10.1.2.3/", "http://localhost:" + port + "/"} {
		resp, body := fetch(t, p.Client(), u, "")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, u)
		require.Contains(t, body, "--deny-private-targets", u)
	}
	code, body := rawConnect(t, p.URL.Host, "10.1.2.3:443")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Empty(t, socks.requested(), "refused before the route was asked")
	resp, body := fetch(t, p.Client(), "http://crawl-target.invalid:"+port+"/remote", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, []string{"crawl-target.invalid"}, socks.requested())
}

// routeErrors reads warcproxy_upstream_route_errors_total{route,reason}.
func routeErrors(t *testing.T, p *proxytest.Proxy, route, reason string) float64 {
	t.Helper()
	for _, mf := range p.Metrics(t) {
		if mf.GetName() != "warcproxy_upstream_route_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labels(m)["route"] == route && labels(m)["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// TestRouteFailures: a route that is down, silent or refuses the
// credentials answers 502 (504 when silent) naming it, for plain requests
// and CONNECT alike; nothing is recorded, the metric counts it, and no
// password shows.
func TestRouteFailures(t *testing.T) {
	o := newRouteOrigin(t)
	const password = "route-s3cret-pw"
	dead := freeAddr(t)
	silent := silentListener(t)
	socksAuth := startMicrosocks(t, "crawler", "right-pw")
	parentAuth := startTinyproxy(t, "crawler", "right-pw")
	for _, tc := range []struct {
		name           string
		route          func(*config.Config)
		kind, addr     string // as the message names the route
		metric, reason string
		status         int
	}{
		{"dead socks", func(c *config.Config) { c.SOCKSProxy = dead }, "socks proxy", dead, "socks", "refused", http.StatusBadGateway},
		{"dead parent", func(c *config.Config) { c.UpstreamProxy = "http://u:" + password + "@" + dead }, "upstream proxy", dead, "parent", "refused", http.StatusBadGateway},
		{"silent socks", func(c *config.Config) { c.SOCKSProxy, c.SocketTimeout = silent, 500*time.Millisecond }, "socks proxy", silent, "socks", "timeout", http.StatusGatewayTimeout},
		{"wrong socks password", func(c *config.Config) {
			c.SOCKSProxy, c.SOCKSProxyUsername, c.SOCKSProxyPassword = socksAuth, "crawler", password
		}, "socks proxy", socksAuth, "socks", "auth", http.StatusBadGateway},
		{"no parent credentials", func(c *config.Config) { c.UpstreamProxy = "http://" + parentAuth },
			"upstream proxy", parentAuth, "parent", "auth", http.StatusBadGateway},
		// tinyproxy answers wrong credentials with 401, as an origin that
		// wants a login does (TestParentProxyOrigin401 is that case).
		{"wrong parent password", func(c *config.Config) { c.UpstreamProxy = "http://crawler:" + password + "@" + parentAuth },
			"upstream proxy", parentAuth, "parent", "auth", http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startRouted(t, tc.route)
			resp, body := fetch(t, p.Client(), o.plain.URL+"/plain", "")
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Contains(t, body, tc.kind+" "+tc.addr)
			require.NotContains(t, body, password)
			code, body := rawConnect(t, p.URL.Host, strings.TrimPrefix(o.secure.URL, "https://"))
			require.Equal(t, tc.status, code, body)
			require.Contains(t, body, tc.kind+" "+tc.addr)
			require.NotContains(t, body, password)
			require.Equal(t, 2.0, routeErrors(t, p, tc.metric, tc.reason))
			require.NotContains(t, p.Log(), password)
			p.Stop()
			for _, r := range warccheck.Dir(t, p.Dir) {
				require.Equal(t, "warcinfo", r.Type, "nothing recorded")
			}
		})
	}
}

// silentListener accepts connections and never answers.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := netListen()
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []interface{ Close() error }
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}
