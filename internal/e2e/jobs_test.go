package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// freePort is a loopback port nothing listens on just now, for a job's
// own port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeJobs writes a jobs file and returns its path.
func writeJobs(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// jobClient is a client of the proxy at proxyURL with user's credentials
// (none when user is ""), trusting the proxy's CA; no keep-alive, so
// each request is a connection of its own.
func jobClient(p *proxytest.Proxy, proxyURL *url.URL, user, password string) *http.Client {
	u := *proxyURL
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyURL(&u),
			TLSClientConfig:   &tls.Config{RootCAs: p.CAPool},
			DisableKeepAlives: true,
		},
		Timeout: 30 * time.Second,
	}
}

func get(t *testing.T, c *http.Client, target, meta string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	if meta != "" {
		req.Header.Set("Warcprox-Meta", meta)
	}
	resp, err := c.Do(req)
	if err != nil {
		// A CONNECT refused with 407 surfaces as the transport's error.
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// TestJobsByCredentialsAndPort: a request belongs to a job by its proxy
// credentials or the port it arrived on, plain and inside a CONNECT
// tunnel, and goes by the job's Warcprox-Meta: its records are in the
// job's prefix, it counts in the job's bucket, and the job's limit holds.
// Wrong, unknown and missing credentials get 407 and are counted; the
// credentials are in no record.
func TestJobsByCredentialsAndPort(t *testing.T) {
	port := freePort(t)
	jobsFile := writeJobs(t, fmt.Sprintf(`
jobs:
  - name: jobA
    password: secret-a
    warcprox-meta:
      warc-prefix: jobA
      stats: {buckets: [bucketA]}
    locked: [warc-prefix]
  - name: jobB
    port: %d
    warcprox-meta:
      warc-prefix: jobB
      stats: {buckets: [bucketB]}
`, port))
	p := proxytest.Start(t, func(c *config.Config) { c.Jobs = jobsFile })
	for round, useTLS := range []bool{false, true} {
		origin := contentOrigin(t, useTLS)
		a := jobClient(p, p.URL, "jobA", "secret-a")
		for i := range 3 {
			status, body, _ := get(t, a, fmt.Sprintf("%s/a/%d?body=a%d", origin.URL, i, i), "")
			require.Equal(t, 200, status, body)
		}
		// The request's own header still works for fields the job does
		// not lock...
		status, body, _ := get(t, a, origin.URL+"/a/own?body=own", `{"stats": {"buckets": ["bucketOwn"]}}`)
		require.Equal(t, 200, status, body)
		// ...and a locked one is refused, naming it.
		status, body, _ = get(t, a, origin.URL+"/a/locked", `{"warc-prefix": "elsewhere"}`)
		require.Equal(t, 400, status)
		require.Contains(t, body, `"warc-prefix"`)

		portURL := &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
		b := jobClient(p, portURL, "", "")
		status, body, _ = get(t, b, origin.URL+"/b/0?body=b0", "")
		require.Equal(t, 200, status, body)
		status, body, _ = get(t, jobClient(p, portURL, "jobB", "x"), origin.URL+"/b/1?body=b1", "")
		require.Equal(t, 200, status, body, "the port's own job by name")

		before := oneMetric(t, p, "warcproxy_proxy_auth_failures_total")
		for _, refused := range []struct {
			name string
			c    *http.Client
		}{
			{"wrong password", jobClient(p, p.URL, "jobA", "nope")},
			{"unknown user", jobClient(p, p.URL, "jobC", "x")},
			{"no credentials", jobClient(p, p.URL, "", "")},
			{"another job on a job's port", jobClient(p, portURL, "jobA", "secret-a")},
		} {
			status, body, _ := get(t, refused.c, origin.URL+"/refused", "")
			if useTLS {
				require.Contains(t, body, "Proxy Authentication Required", refused.name)
			} else {
				require.Equal(t, 407, status, refused.name)
			}
		}
		require.Equal(t, before+4, oneMetric(t, p, "warcproxy_proxy_auth_failures_total"))

		// Each job's bucket counts its captures (over both rounds): a
		// request of the job over a limit of 1 gets 420 with the bucket's
		// stats.
		for bucket, want := range map[string]int{"bucketA": 3, "bucketOwn": 1, "bucketB": 2} {
			c := a
			if bucket == "bucketB" {
				c = b
			}
			status, body, h := get(t, c, origin.URL+"/limit",
				fmt.Sprintf(`{"stats": {"buckets": [%q]}, "limits": {"%s/total/urls": 1}}`, bucket, bucket))
			require.Equal(t, 420, status, "%s: %s", bucket, body)
			require.Contains(t, h.Get("Warcprox-Meta"), fmt.Sprintf(`"urls":%d`, want*(round+1)), bucket)
		}
	}
	st := p.Status(t)
	jobs, ok := st["jobs"].(map[string]any)
	require.True(t, ok, "/status has jobs: %v", st["jobs"])
	// Admitted per round: jobA 4 fetched and 2 limit checks (the locked
	// one is refused before), jobB 2 fetched and 1 limit check.
	require.Equal(t, float64(2*6), jobs["jobA"].(map[string]any)["requests"])
	require.Equal(t, float64(2*3), jobs["jobB"].(map[string]any)["requests"])
	require.Equal(t, float64(port), jobs["jobB"].(map[string]any)["port"])
	p.Stop()

	recs := warccheck.Dir(t, p.Dir)
	prefixes := map[string]string{"/a/": "jobA-", "/b/": "jobB-"}
	seen := 0
	for _, r := range recs {
		if r.Type == "warcinfo" {
			continue
		}
		require.False(t, bytes.Contains(r.Block, []byte("Proxy-Authorization")), "credentials in %s", r.TargetURI)
		require.False(t, bytes.Contains(r.Block, []byte("secret-a")), "password in %s", r.TargetURI)
		u, err := url.Parse(r.TargetURI)
		require.NoError(t, err)
		for path, prefix := range prefixes {
			if strings.HasPrefix(u.Path, path) {
				require.True(t, strings.HasPrefix(r.File, prefix), "%s of %s is in %s", r.Type, r.TargetURI, r.File)
				seen++
			}
		}
		require.NotEqual(t, "/refused", u.Path, "a refused request was recorded")
	}
	require.Equal(t, 2*2*(4+2), seen, "a response and a request record per capture, http and https")
}
