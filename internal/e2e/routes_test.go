package e2e

import (
	"bufio"
	"encoding/json"
	"net"
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
	// As Debian packages it: CONNECT to 443 and 563 only, so the proxy's
	// check gets a 403 (after the credentials were taken); logged, so the
	// CONNECTs can be counted.
	logFile := filepath.Join(t.TempDir(), "tinyproxy.log")
	parent := startTinyproxyWith(t, "crawler", "right-pw", "ConnectPort 443\nConnectPort 563\nLogLevel Info\nLogFile \""+logFile+"\"\n")
	p := startRouted(t, func(c *config.Config) { c.UpstreamProxy = "http://crawler:right-pw@" + parent })
	for _, path := range []string{"/a", "/b", "/c"} {
		resp, body := fetch(t, p.Client(), origin.URL+path, "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
		require.Contains(t, body, "members only")
	}
	require.Zero(t, routeErrors(t, p, "parent", "auth"))
	connects, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(connects), "CONNECT "+strings.TrimPrefix(origin.URL, "http://")),
		"one check for three 401s: the parent that took the credentials is believed")
	p.Stop()
	var got []string
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type == "response" || r.Type == "revisit" { // /b has /a's body
			require.Contains(t, string(r.Block), "401 Unauthorized")
			got = append(got, r.Header["WARC-Target-URI"])
		}
	}
	require.ElementsMatch(t, []string{origin.URL + "/a", origin.URL + "/b", origin.URL + "/c"}, got)
}

// TestParentProxyErrorPage: when the parent cannot reach the origin, a
// plain request gets the parent's own error page (tinyproxy: 500 Unable to
// connect), passed to the client and recorded as the site's response with
// the parent's words and its Server header, by which operations.md tells
// an archivist to find such records; an HTTPS one gets a 502 naming the
// route, and nothing is recorded for it.
func TestParentProxyErrorPage(t *testing.T) {
	closed := freeAddr(t) // nothing listens there
	parent := startTinyproxy(t, "", "")
	p := startRouted(t, func(c *config.Config) { c.UpstreamProxy = "http://" + parent })
	resp, body := fetch(t, p.Client(), "http://"+closed+"/gone", "")
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
	_, err := p.Client().Get("https://" + closed + "/gone") // the CONNECT's answer
	require.ErrorContains(t, err, "Bad Gateway")
	require.Equal(t, 1.0, routeErrors(t, p, "parent", "rejected"))
	p.Stop()
	var got []string
	for _, r := range warccheck.Dir(t, p.Dir) {
		if r.Type != "response" {
			continue
		}
		got = append(got, r.Header["WARC-Target-URI"])
		head, _, _ := strings.Cut(string(r.Block), "\r\n\r\n")
		require.True(t, strings.HasPrefix(head, "HTTP/1.0 500 Unable to connect\r\n") ||
			strings.HasPrefix(head, "HTTP/1.1 500 Unable to connect\r\n"), head)
		require.Regexp(t, `(?m)^Server: tinyproxy/`, head)
		require.NotContains(t, head, "\r\nVia:", "tinyproxy marks what it relays with Via, not its own pages")
	}
	require.Equal(t, []string{"http://" + closed + "/gone"}, got)
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

// TestRouteTargetFailures: an origin the SOCKS server reports it could
// not reach (RFC 1928 replies 3 to 6), or does not answer CONNECT for in
// time, gets the answer, the metric kind and the crawl log status the same
// failure gets on a direct dial, with a text naming the SOCKS server; no
// route error is counted. Replies that put the failure on the server
// (general failure: microsocks' answer for a name it cannot resolve) stay
// the route's. Nothing is recorded.
func TestRouteTargetFailures(t *testing.T) {
	dead := freeAddr(t)
	_, deadPort, _ := net.SplitHostPort(dead)
	microsocks := startMicrosocks(t, "", "")
	tor := startNameSOCKS(t, "127.0.0.1")
	unreachable, expired, failing, silent := replySOCKS(t, 4), replySOCKS(t, 6), replySOCKS(t, 1), replySOCKS(t, 0)
	via := func(addr string) func(*config.Config) { return func(c *config.Config) { c.SOCKSProxy = addr } }
	for _, tc := range []struct {
		name        string
		route       func(*config.Config)
		target      string // host:port
		status      int
		kind        string   // warcproxy_upstream_errors_total
		crawlStatus string   // the crawl log's status column
		says        []string // in the answer's text
		routeReason string   // the route error counted, if any
	}{
		{"direct, refused", func(*config.Config) {}, dead, http.StatusBadGateway, "refused", "-2",
			[]string{"connection refused fetching"}, ""},
		{"microsocks, refused", via(microsocks), dead, http.StatusBadGateway, "refused", "-2",
			[]string{"connection refused fetching", "connection refused (reported by socks proxy " + microsocks + ")"}, ""},
		{"tor, refused", func(c *config.Config) { c.OnionTorSOCKSProxy = tor.addr() }, "hiddenservice.onion:" + deadPort,
			http.StatusBadGateway, "refused", "-2", []string{"connection refused (reported by tor socks proxy " + tor.addr() + ")"}, ""},
		{"host unreachable", via(unreachable), "192.0.2.1:80", http.StatusBadGateway, "other", "-2",
			[]string{"192.0.2.1:80: host unreachable (reported by socks proxy " + unreachable + ")"}, ""},
		{"TTL expired", via(expired), "192.0.2.1:80", http.StatusGatewayTimeout, "timeout", "-2",
			[]string{"upstream timeout fetching", "(reported by socks proxy " + expired + ")"}, ""},
		{"no answer to CONNECT", func(c *config.Config) { c.SOCKSProxy, c.SocketTimeout = silent, 500*time.Millisecond },
			"192.0.2.1:80", http.StatusGatewayTimeout, "timeout", "-2", []string{"no answer from socks proxy " + silent + " to CONNECT"}, ""},
		{"general failure", via(failing), "192.0.2.1:80", http.StatusBadGateway, "route", "-404",
			[]string{"socks proxy " + failing + ": refused CONNECT to 192.0.2.1:80: general SOCKS server failure"}, "rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startRouted(t, func(c *config.Config) {
				c.CrawlLogDir = dir
				tc.route(c)
			})
			resp, body := fetch(t, p.Client(), "http://"+tc.target+"/gone", `{"warc-prefix": "target"}`)
			require.Equal(t, tc.status, resp.StatusCode, body)
			code, connectBody := rawConnect(t, p.URL.Host, tc.target)
			require.Equal(t, tc.status, code, connectBody)
			for _, s := range tc.says {
				require.Contains(t, body, s)
			}
			require.Equal(t, 2.0, upstreamErrors(t, p, tc.kind), "the fetch and the CONNECT")
			wantRoute := 0.0
			if tc.routeReason != "" {
				wantRoute = 2
			}
			require.Equal(t, wantRoute, allRouteErrors(t, p))
			require.Equal(t, wantRoute, routeErrors(t, p, "socks", tc.routeReason))
			p.Settle()
			p.Stop()
			lines := readLines(t, crawlLogPath(p, dir, "target"))
			require.Len(t, lines, 1)
			require.Equal(t, tc.crawlStatus, strings.Fields(lines[0])[1], lines[0])
			for _, r := range warccheck.Dir(t, p.Dir) {
				require.Equal(t, "warcinfo", r.Type, "nothing recorded")
			}
		})
	}
}

// TestParentReadFailures: a plain request the parent proxy takes and then
// never answers, or hangs up on, keeps the kind of its failure (a timeout
// may be the origin's, behind the parent) but the answer says which way
// it went, without the parent's credentials; nothing is recorded.
func TestParentReadFailures(t *testing.T) {
	const password = "parent-s3cret-pw"
	silent, hangup := silentListener(t), hangupListener(t)
	for _, tc := range []struct {
		name, parent string
		status       int
		kind         string
		says         string
	}{
		{"silent", silent, http.StatusGatewayTimeout, "timeout", "upstream timeout fetching"},
		{"hangs up", hangup, http.StatusBadGateway, "other", "closed the connection before a complete response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startRouted(t, func(c *config.Config) {
				c.UpstreamProxy, c.SocketTimeout = "http://crawler:"+password+"@"+tc.parent, time.Second
			})
			resp, body := fetch(t, p.Client(), "http://192.0.2.1/page", "")
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Contains(t, body, tc.says)
			require.Contains(t, body, "(through upstream proxy "+tc.parent+")")
			require.NotContains(t, body, password)
			require.Equal(t, 1.0, upstreamErrors(t, p, tc.kind))
			require.NotContains(t, p.Log(), password)
			p.Stop()
			for _, r := range warccheck.Dir(t, p.Dir) {
				require.Equal(t, "warcinfo", r.Type, "nothing recorded")
			}
		})
	}
}

// upstreamErrors reads warcproxy_upstream_errors_total{kind}.
func upstreamErrors(t *testing.T, p *proxytest.Proxy, kind string) float64 {
	t.Helper()
	return sumCounter(t, p, "warcproxy_upstream_errors_total", func(l map[string]string) bool { return l["kind"] == kind })
}

// allRouteErrors sums warcproxy_upstream_route_errors_total.
func allRouteErrors(t *testing.T, p *proxytest.Proxy) float64 {
	t.Helper()
	return sumCounter(t, p, "warcproxy_upstream_route_errors_total", func(map[string]string) bool { return true })
}

func sumCounter(t *testing.T, p *proxytest.Proxy, name string, match func(map[string]string) bool) float64 {
	t.Helper()
	var sum float64
	for _, mf := range p.Metrics(t) {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if match(labels(m)) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// hangupListener reads a request head on each connection it accepts and
// hangs up without answering.
func hangupListener(t *testing.T) string {
	t.Helper()
	return serveLoopback(t, func(c net.Conn) {
		defer c.Close()
		_, _ = http.ReadRequest(bufio.NewReader(c))
	})
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
