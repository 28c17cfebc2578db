package e2e

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestWarcproxMetaRequests: the parts of Warcprox-Meta acted on so far —
// warc-prefix, blocks, accept capture-metadata, and a 400 for a bad header
// — over plain HTTP and inside a MITM tunnel.
func TestWarcproxMetaRequests(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			var hits atomic.Int64
			origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				fmt.Fprint(w, "page "+r.URL.Path)
			}))
			if useTLS {
				origin.StartTLS()
			} else {
				origin.Start()
			}
			defer origin.Close()
			// --prefix -: only requests naming a warc-prefix are archived.
			p := proxytest.Start(t, func(c *config.Config) { c.Prefix = "-" })
			client := p.Client()
			get := func(path, meta string) *http.Response {
				req, _ := http.NewRequest("GET", origin.URL+path, nil)
				if meta != "" {
					req.Header.Set("Warcprox-Meta", meta)
				}
				resp, err := client.Do(req)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				resp.Header.Set("X-Test-Body", string(body))
				return resp
			}

			resp := get("/plain", "")
			require.Equal(t, 200, resp.StatusCode)
			resp = get("/special", `{"warc-prefix": "special", "accept": ["capture-metadata"]}`)
			require.Equal(t, 200, resp.StatusCode)
			var cm struct {
				CaptureMetadata struct {
					Timestamp string `json:"timestamp"`
				} `json:"capture-metadata"`
			}
			require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Warcprox-Meta")), &cm))
			timestamp := cm.CaptureMetadata.Timestamp
			require.NotEmpty(t, timestamp)
			resp = get("/dash", `{"warc-prefix": "-"}`)
			require.Equal(t, 200, resp.StatusCode)
			require.Empty(t, resp.Header.Get("Warcprox-Meta"), "capture-metadata only when asked")

			before := hits.Load()
			resp = get("/bad-json", `{"warc-prefix": `)
			require.Equal(t, 400, resp.StatusCode)
			require.Contains(t, resp.Header.Get("X-Test-Body"), "Warcprox-Meta")
			resp = get("/bad-type", `{"warc-prefix": 5}`)
			require.Equal(t, 400, resp.StatusCode)
			require.Contains(t, resp.Header.Get("X-Test-Body"), "warc-prefix")
			resp = get("/bad-prefix", `{"warc-prefix": "../etc"}`)
			require.Equal(t, 400, resp.StatusCode)
			host := strings.TrimPrefix(strings.TrimPrefix(origin.URL, "https://"), "http://")
			hostOnly := strings.Split(host, ":")[0]
			resp = get("/blocked", fmt.Sprintf(`{"warc-prefix": "special", "blocks": [{"domain": %q}]}`, hostOnly))
			require.Equal(t, 403, resp.StatusCode)
			var blocked map[string]map[string]any
			require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Warcprox-Meta")), &blocked))
			require.Equal(t, hostOnly, blocked["blocked-by-rule"]["domain"])
			require.Equal(t, before, hits.Load(), "rejected requests never reach the origin")

			big := fmt.Sprintf(`{"warc-prefix": "special", "metadata": {"seed": %q}}`, strings.Repeat("x", 1<<20))
			resp = get("/big-meta", big)
			require.Equal(t, 200, resp.StatusCode, "a 1 MB header still works")
			p.Stop()

			recs := warccheck.Dir(t, p.Dir)
			res := byType(t, recs, "response")
			require.Len(t, res, 2, "only the requests naming warc-prefix special")
			special := res[origin.URL+"/special"]
			require.True(t, strings.HasPrefix(special.File, "special-"), special.File)
			require.Equal(t, timestamp, special.Date.UTC().Format("2006-01-02T15:04:05Z"), "capture-metadata timestamp is the WARC-Date")
			require.Contains(t, res, origin.URL+"/big-meta")
			for _, r := range byType(t, recs, "request") {
				require.NotContains(t, string(r.Block), "Warcprox-Meta")
			}
			files, _ := os.ReadDir(p.Dir)
			for _, f := range files {
				require.False(t, strings.HasPrefix(f.Name(), "WARCPROX"), "nothing in the default series: %s", f.Name())
			}
		})
	}
}

// TestBlockedRuleEchoIsAValidHeader: the rule echoed in the 403's
// Warcprox-Meta response header can come from compressed_blocks, which
// net/http never validated; a DEL or non-ASCII byte in it must not make the
// response unreadable (they are escaped as \uXXXX, as warcprox does).
func TestBlockedRuleEchoIsAValidHeader(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "page")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	// The DEL is in the matching rule: a regex that matches everything.
	var zb bytes.Buffer
	zw := zlib.NewWriter(&zb)
	_, _ = io.WriteString(zw, `[{"regex": ".*|`+"\x7f"+`|é😀"}]`)
	zw.Close()
	meta := fmt.Sprintf(`{"compressed_blocks": %q}`, base64.StdEncoding.EncodeToString(zb.Bytes()))
	req, _ := http.NewRequest("GET", origin.URL+"/x", nil)
	req.Header.Set("Warcprox-Meta", meta)
	resp, err := p.Client().Do(req)
	require.NoError(t, err, "the client must be able to read the 403")
	resp.Body.Close()
	require.Equal(t, 403, resp.StatusCode)
	var echo map[string]map[string]string
	require.NoError(t, json.Unmarshal([]byte(resp.Header.Get("Warcprox-Meta")), &echo))
	require.Equal(t, ".*|\x7f|é😀", echo["blocked-by-rule"]["regex"], "the escaped echo decodes to the rule")
}
