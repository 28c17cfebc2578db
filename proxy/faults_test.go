package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// TestFetchTimeoutCutsTrickle: an origin that trickles its body forever
// (a byte every 20 ms, well inside --socket-timeout) is cut at
// --fetch-timeout: the client's response is aborted, not ended cleanly, and
// the record holds what arrived, marked WARC-Truncated: time. Plain and
// inside a tunnel.
func TestFetchTimeoutCutsTrickle(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			stop := make(chan struct{})
			origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Length", "1000000")
				w.WriteHeader(200)
				for {
					if _, err := io.WriteString(w, "x"); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-stop:
						return
					case <-r.Context().Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}))
			if useTLS {
				origin.StartTLS()
			} else {
				origin.Start()
			}
			defer origin.Close()
			defer close(stop)
			p := proxytest.Start(t, func(c *config.Config) {
				c.FetchTimeout = 700 * time.Millisecond
				c.SocketTimeout = 30 * time.Second
			})
			resp, err := p.Client().Get(origin.URL + "/trickle")
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Error(t, err, "the client must see that the body is incomplete")
			require.NotEmpty(t, body)
			require.Less(t, len(body), 1000000)

			p.Stop()
			res := byType(t, warccheck.Dir(t, p.Dir), "response")
			rec, ok := res[origin.URL+"/trickle"]
			require.True(t, ok)
			require.Equal(t, "time", rec.Header["WARC-Truncated"])
			payload := string(rec.Block[strings.Index(string(rec.Block), "\r\n\r\n")+4:])
			require.GreaterOrEqual(t, len(payload), len(body), "the record holds at least what the client got")
			require.Equal(t, strings.Repeat("x", len(payload)), payload)
		})
	}
}
