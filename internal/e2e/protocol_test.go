package e2e

import (
	"bufio"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// protocolLines lists, per record of the given WARC-Type in dir's
// .warc.gz files keyed by "TYPE TARGET", its WARC-Protocol and
// WARC-Cipher-Suite lines in order, as written (repeated fields kept,
// which a map of headers would fold).
func protocolLines(t *testing.T, dir string) map[string][]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	require.NoError(t, err)
	got := map[string][]string{}
	for _, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		var typ, target string
		var lines []string
		inHeader := false
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			switch {
			case line == "WARC/1.0" || line == "WARC/1.1":
				inHeader, typ, target, lines = true, "", "", nil
			case inHeader && line == "":
				inHeader = false
				if typ != "warcinfo" {
					got[typ+" "+target] = lines
				}
			case inHeader && strings.HasPrefix(line, "WARC-Type: "):
				typ = strings.TrimPrefix(line, "WARC-Type: ")
			case inHeader && strings.HasPrefix(line, "WARC-Target-URI: "):
				target = strings.TrimPrefix(line, "WARC-Target-URI: ")
			case inHeader && (strings.HasPrefix(line, "WARC-Protocol: ") || strings.HasPrefix(line, "WARC-Cipher-Suite: ")):
				lines = append(lines, line)
			}
		}
		require.NoError(t, sc.Err())
		_, _ = io.Copy(io.Discard, zr)
		f.Close()
	}
	return got
}

// TestWARCProtocolFields: request, response and revisit records say how
// they were fetched upstream, http/1.1 then the TLS version, and the
// cipher suite over TLS, as repeated fields that the independent readers
// read; --warc-protocol=false leaves them out.
func TestWARCProtocolFields(t *testing.T) {
	same := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, strings.Repeat("the same payload for the same path, deduplicated: "+r.URL.Path+"\n", 20))
	})
	tlsOrigin := httptest.NewTLSServer(same)
	defer tlsOrigin.Close()
	plainOrigin := httptest.NewServer(same)
	defer plainOrigin.Close()

	p := proxytest.Start(t, nil)
	client := p.Client()
	for _, u := range []string{tlsOrigin.URL + "/a", tlsOrigin.URL + "/a", plainOrigin.URL + "/b"} {
		resp, err := client.Get(u)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		p.SettleStores() // the first /a is saved for dedup before the second
	}
	p.Stop()
	warccheck.Dir(t, p.Dir)
	got := protocolLines(t, p.Dir)
	overTLS := got["response "+tlsOrigin.URL+"/a"]
	require.Len(t, overTLS, 3, "%v", got)
	require.Equal(t, []string{"WARC-Protocol: http/1.1", "WARC-Protocol: tls/1.3"}, overTLS[:2])
	require.Equal(t, "WARC-Cipher-Suite: TLS_", overTLS[2][:len("WARC-Cipher-Suite: TLS_")])
	for _, typ := range []string{"request", "revisit"} {
		require.Equal(t, overTLS, got[typ+" "+tlsOrigin.URL+"/a"], typ)
	}
	for _, typ := range []string{"response", "request"} {
		require.Equal(t, []string{"WARC-Protocol: http/1.1"}, got[typ+" "+plainOrigin.URL+"/b"], typ)
	}

	off := proxytest.Start(t, func(c *config.Config) { c.WARCProtocol = false })
	resp, err := off.Client().Get(tlsOrigin.URL + "/c")
	require.NoError(t, err)
	resp.Body.Close()
	off.Stop()
	for k, lines := range protocolLines(t, off.Dir) {
		require.Empty(t, lines, k)
	}
}
