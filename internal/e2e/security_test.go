package e2e

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// rawProxyRequest sends one request line and headers to the proxy and
// returns the status line and headers of its answer.
func rawProxyRequest(t *testing.T, p *proxytest.Proxy, head string) (string, http.Header) {
	t.Helper()
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, head+"\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.Status, resp.Header
}

// TestProxyAuth: with --proxy-auth and --proxy-auth-file, requests without
// the right Proxy-Authorization get 407 and a challenge (plain, CONNECT,
// /status); with it, plain and HTTPS fetches work, and the credentials are
// neither forwarded nor recorded.
func TestProxyAuth(t *testing.T) {
	var sawAuth atomic.Bool
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			sawAuth.Store(true)
		}
		fmt.Fprint(w, "hello")
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	secure := httptest.NewTLSServer(handler)
	defer secure.Close()

	authFile := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(authFile, []byte("# crawlers\ncrawler2:s3cret two\n\n"), 0o600))
	p := proxytest.Start(t, func(c *config.Config) {
		c.ProxyAuth = "crawler1:pw1"
		c.ProxyAuthFile = authFile
	})
	host := strings.TrimPrefix(plain.URL, "http://")
	basic := func(userpass string) string {
		return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(userpass)) + "\r\n"
	}
	for _, tt := range []struct {
		name, head string
		want       string
	}{
		{"plain, none", "GET " + plain.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n", "407 Proxy Authentication Required"},
		{"plain, wrong password", "GET " + plain.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\n" + basic("crawler1:nope"), "407 Proxy Authentication Required"},
		{"plain, not basic", "GET " + plain.URL + "/ HTTP/1.1\r\nHost: " + host + "\r\nProxy-Authorization: Bearer x\r\n", "407 Proxy Authentication Required"},
		{"CONNECT, none", "CONNECT " + strings.TrimPrefix(secure.URL, "https://") + " HTTP/1.1\r\nHost: x\r\n", "407 Proxy Authentication Required"},
		{"status, none", "GET /status HTTP/1.1\r\nHost: " + p.URL.Host + "\r\n", "407 Proxy Authentication Required"},
		{"status, authorized", "GET /status HTTP/1.1\r\nHost: " + p.URL.Host + "\r\n" + basic("crawler1:pw1"), "200 OK"},
		{"plain, second user from the file", "GET " + plain.URL + "/file-user HTTP/1.1\r\nHost: " + host + "\r\n" + basic("crawler2:s3cret two"), "200 OK"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, h := rawProxyRequest(t, p, tt.head)
			require.Equal(t, tt.want, status)
			if strings.HasPrefix(tt.want, "407") {
				require.Equal(t, `Basic realm="warcproxy"`, h.Get("Proxy-Authenticate"))
			}
		})
	}

	// Go's client sends the URL's credentials as Proxy-Authorization, on
	// CONNECT too.
	c := p.Client()
	u := *p.URL
	u.User = url.UserPassword("crawler1", "pw1")
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(&u)
	for _, target := range []string{plain.URL + "/ok", secure.URL + "/ok"} {
		resp, body := fetch(t, c, target, "")
		require.Equal(t, 200, resp.StatusCode, target)
		require.Equal(t, "hello", body)
	}
	require.False(t, sawAuth.Load(), "Proxy-Authorization is never forwarded")
	p.Stop()
	for _, r := range warccheck.Dir(t, p.Dir) {
		require.NotContains(t, strings.ToLower(string(r.Block)), "proxy-authorization", r.TargetURI)
	}
}

// TestDenyPrivateTargets: with --deny-private-targets, loopback targets are
// refused with 403 before anything reaches them, by IP, by a name that
// resolves there (checked on the dialed address, so DNS rebinding cannot
// get around it) and through CONNECT.
func TestDenyPrivateTargets(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "internal")
	}))
	defer origin.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer secure.Close()
	p := proxytest.Start(t, func(c *config.Config) { c.DenyPrivateTargets = true })
	c := p.Client()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin.URL, "http://"))
	for _, target := range []string{origin.URL + "/ip", "http://localhost:" + port + "/name", "http://[::ffff:127.0.0.1]:" + port + "/mapped"} {
		resp, body := fetch(t, c, target, "")
		require.Equal(t, 403, resp.StatusCode, target)
		require.Contains(t, body, "--deny-private-targets", target)
	}
	_, err := c.Get(secure.URL + "/tls")
	require.Error(t, err, "the CONNECT is refused")
	status, _ := rawProxyRequest(t, p, "CONNECT "+strings.TrimPrefix(secure.URL, "https://")+" HTTP/1.1\r\nHost: x\r\n")
	require.Equal(t, "403 Forbidden", status)
	require.Zero(t, hits.Load(), "nothing reached the private targets")

	// Without the flag (the default), the same targets are fetched.
	q := proxytest.Start(t, nil)
	resp, body := fetch(t, q.Client(), origin.URL+"/ip", "")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "internal", body)
}
