package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// renegotiatingOrigin is `openssl s_server` speaking TLS 1.2 to one
// connection, driven through its stdin: "r" sends a HelloRequest (a
// server-initiated renegotiation), anything else goes to the client as is.
type renegotiatingOrigin struct {
	addr  string
	stdin io.Writer
	lines chan string // its stdout and stderr, -state lines included
}

func startRenegotiatingOrigin(t *testing.T) *renegotiatingOrigin {
	t.Helper()
	openssl := needTool(t, "openssl", "openssl")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	out, err := exec.Command(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
		"-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=127.0.0.1", "-days", "1").CombinedOutput()
	require.NoError(t, err, "%s", out)

	// -naccept 1: a retry on a fresh connection finds nobody, so a refused
	// renegotiation cannot be hidden by a second attempt.
	cmd := exec.Command(openssl, "s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key,
		"-tls1_2", "-state", "-naccept", "1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); pw.Close() })

	o := &renegotiatingOrigin{stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(o.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			o.lines <- sc.Text()
		}
	}()
	m := o.waitFor(t, regexp.MustCompile(`^ACCEPT (\S+)`))
	o.addr = m[1]
	return o
}

// waitFor reads the server's output up to the first line matching re.
func (o *renegotiatingOrigin) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-o.lines:
			require.True(t, ok, "openssl s_server exited before printing %s", re)
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("openssl s_server did not print %s", re)
		}
	}
}

// TestUpstreamRenegotiation: an origin that renegotiates TLS in the middle
// of an exchange (openssl s_server's "r", a HelloRequest after the request
// has arrived) is fetched and recorded with --unsafe-legacy-renegotiation;
// without it the fetch fails with 502, as before the flag existed.
func TestUpstreamRenegotiation(t *testing.T) {
	for _, allow := range []bool{true, false} {
		name := "refused by default"
		if allow {
			name = "allowed with the flag"
		}
		t.Run(name, func(t *testing.T) {
			origin := startRenegotiatingOrigin(t)
			p := proxytest.Start(t, func(c *config.Config) {
				c.UnsafeLegacyRenegotiation = allow
				c.DedupDB, c.StatsDB = "none", "none"
			})
			target := "https://" + origin.addr + "/renegotiated"
			type result struct {
				status int
				body   string
				err    error
			}
			got := make(chan result, 1)
			go func() {
				resp, err := p.Client().Get(target)
				if err != nil {
					got <- result{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				got <- result{resp.StatusCode, string(b), err}
			}()

			// The request has reached the origin and the proxy is waiting
			// for the response: renegotiate now.
			origin.waitFor(t, regexp.MustCompile(`^GET /renegotiated HTTP/1\.1`))
			_, err := io.WriteString(origin.stdin, "r\n")
			require.NoError(t, err)
			if allow {
				// The proxy answers the HelloRequest at once: wait for the
				// second handshake to end before the response goes out
				// (Go's client takes no application data in the middle of
				// a handshake).
				origin.waitFor(t, regexp.MustCompile(`SSL_accept:SSLv3/TLS write hello request`))
				origin.waitFor(t, regexp.MustCompile(`SSL_accept:SSLv3/TLS write finished`))
				_, err = io.WriteString(origin.stdin, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
				require.NoError(t, err)
			}
			r := <-got
			require.NoError(t, r.err)
			p.Stop()
			var responses []string
			for _, rec := range warccheck.Dir(t, p.Dir) {
				if rec.Type == "response" && rec.TargetURI == target {
					responses = append(responses, string(rec.Block))
				}
			}
			if !allow {
				require.Equal(t, http.StatusBadGateway, r.status, r.body)
				require.Empty(t, responses, "nothing recorded for a failed fetch")
				return
			}
			require.Equal(t, http.StatusOK, r.status, r.body)
			require.Equal(t, "hello", r.body)
			require.Len(t, responses, 1)
			require.True(t, strings.HasSuffix(responses[0], "\r\n\r\nhello"), "the record holds the response: %q", responses[0])
		})
	}
}
