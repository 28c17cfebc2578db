package e2e

// CONNECT tunnels: the client's SNI reaches the origin and never names a
// file, and the proxy does not tunnel to itself.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// TestSNIPathTraversal: with --certs-dir, a client SNI such as "../x" cannot
// name a file outside it.
func TestSNIPathTraversal(t *testing.T) {
	origin := httptest.NewTLSServer(echoOrigin())
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.CertsDir = filepath.Join(filepath.Dir(c.CACert), "..", "certs")
	})
	victim := filepath.Join(filepath.Dir(p.Config.CACert), "..", "victim.pem")
	require.NoError(t, os.WriteFile(victim, []byte("someone else's key\n"), 0o600))

	tun, err := dialConnect(t.Context(), p.URL.Host, strings.TrimPrefix(origin.URL, "https://"))
	require.NoError(t, err)
	defer tun.Close()
	tc := tls.Client(tun, &tls.Config{ServerName: "../victim", InsecureSkipVerify: true}) //nolint:gosec // attacker
	require.NoError(t, tc.Handshake())
	tc.Close()

	after, err := os.ReadFile(victim)
	require.NoError(t, err)
	if string(after) != "someone else's key\n" {
		var first *x509.Certificate
		for rest := after; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				first, _ = x509.ParseCertificate(b.Bytes)
				break
			}
		}
		t.Fatalf("a client's SNI overwrote %s outside --certs-dir (now a key and a certificate for %q)",
			filepath.Clean(victim), first.Subject.CommonName)
	}
}

// TestConnectToSelf: a CONNECT to the proxy's own address is refused.
func TestConnectToSelf(t *testing.T) {
	p := proxytest.Start(t, nil)
	c, err := dialConnect(t.Context(), p.URL.Host, p.URL.Host)
	if err == nil {
		defer c.Close()
		_, _ = io.WriteString(c, "GET /status HTTP/1.1\r\nHost: "+p.URL.Host+"\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, rerr := http.ReadResponse(bufio.NewReader(c), nil)
		if rerr == nil {
			t.Logf("inside the tunnel to itself: %s", resp.Status)
		}
	}
	require.Error(t, err, "CONNECT to the proxy's own address was accepted")
}

// TestUpstreamSNI: a client that CONNECTs to an IP address and sends SNI has
// that name sent to the origin.
func TestUpstreamSNI(t *testing.T) {
	origin := httptest.NewUnstartedServer(echoOrigin())
	origin.TLS = &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if h.ServerName != "site.example" {
			return nil, fmt.Errorf("no site for SNI %q", h.ServerName)
		}
		return nil, nil
	}}
	origin.Config.ErrorLog = nil
	origin.StartTLS()
	defer origin.Close()
	p := proxytest.Start(t, nil)
	addr := strings.TrimPrefix(origin.URL, "https://")
	resp, body := mitmGet(t, p, addr, "site.example", 0, "GET / HTTP/1.1\r\nHost: site.example\r\n\r\n")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
}
