package proxy_test

// Regression tests for defects found in review: origins and clients that
// misbehave at the worst moment, and the proxy's own bookkeeping.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

// scriptOrigin runs serve for every connection accepted on 127.0.0.1.
type scriptOrigin struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
	stop  chan struct{}
}

func newScriptOrigin(t *testing.T, serve func(o *scriptOrigin, n int64, c net.Conn, br *bufio.Reader)) *scriptOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := &scriptOrigin{ln: ln, stop: make(chan struct{})}
	serveConns(t, ln, &o.wg, func(c net.Conn) {
		defer c.Close()
		serve(o, o.conns.Add(1), c, bufio.NewReader(c))
	})
	// Registered after serveConns' cleanup, so it runs first: scripts
	// waiting on stop end before the listener's wait.
	t.Cleanup(func() {
		select {
		case <-o.stop:
		default:
			close(o.stop)
		}
	})
	return o
}

func (o *scriptOrigin) addr() string { return o.ln.Addr().String() }

// readHead reads one request head and returns its request line and the
// Content-Length it declares.
func readHead(br *bufio.Reader) (line string, length int, err error) {
	line, err = br.ReadString('\n')
	if err != nil {
		return "", 0, err
	}
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return "", 0, err
		}
		if h == "\r\n" {
			break
		}
		k, v, _ := strings.Cut(strings.TrimSpace(h), ":")
		if strings.EqualFold(k, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return strings.TrimSpace(line), length, nil
}

// rawGet sends one absolute-form request on a new connection to the proxy
// and returns the response (body read) or an error.
func rawGet(t *testing.T, p *proxytest.Proxy, method, url string, timeout time.Duration) (*http.Response, string, error) {
	t.Helper()
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	host := strings.SplitN(strings.SplitN(url, "://", 2)[1], "/", 2)[0]
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", method, url, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// TestShutdownCutsTricklingOriginHead: an origin that trickles its response
// head forever (never idle for --socket-timeout) cannot hold up a shutdown
// past its deadline.
func TestShutdownCutsTricklingOriginHead(t *testing.T) {
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := io.WriteString(c, "X-Trickle: 1\r\n"); err != nil {
				return
			}
		}
	})
	p := proxytest.Start(t, func(c *config.Config) { c.ShutdownTimeout = time.Second })
	go func() { _, _, _ = rawGet(t, p, "GET", "http://"+origin.addr()+"/slow-head", time.Minute) }()
	time.Sleep(500 * time.Millisecond)

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Shutdown() }()
	select {
	case err := <-done:
		t.Logf("shutdown returned after %s", time.Since(start))
		require.ErrorIs(t, err, context.DeadlineExceeded, "a forced shutdown says so")
	case <-time.After(14 * time.Second):
		t.Errorf("Shutdown with a 1 s budget still blocked after %s: forward is stuck in roundTrip, "+
			"which never looks at the request context", time.Since(start).Round(time.Second))
		close(origin.stop) // let it unwind
		err := <-done
		t.Logf("shutdown finally returned: %v", err)
	}
}

// TestClientGoneWhileWaitingForHead: when the client hangs up while the
// proxy waits for the response head, the origin connection is closed at
// once.
func TestClientGoneWhileWaitingForHead(t *testing.T) {
	closed := make(chan time.Duration, 1)
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := br.ReadByte() // EOF when the proxy closes its side
		if err == io.EOF {
			closed <- time.Since(start)
		} else {
			closed <- -1
		}
	})
	p := proxytest.Start(t, nil)
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	fmt.Fprintf(c, "GET http://%s/x HTTP/1.1\r\nHost: %s\r\n\r\n", origin.addr(), origin.addr())
	time.Sleep(300 * time.Millisecond)
	c.Close()
	d := <-closed
	require.True(t, d >= 0, "the proxy still holds the origin connection 5 s after its client left")
}

// TestClientBodyErrorAnsweredAtOnce: a broken request body from the client
// is answered at once, without waiting for the origin.
func TestClientBodyErrorAnsweredAtOnce(t *testing.T) {
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, br) // waits for a body that never ends
	})
	// 8 s instead of the default 60 s, so that the test ends soon after failing.
	p := proxytest.Start(t, func(c *config.Config) { c.SocketTimeout = 8 * time.Second })
	c, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "POST http://%s/up HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\n", origin.addr(), origin.addr())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "no answer after %s", time.Since(start).Round(time.Second))
	require.Equal(t, 400, resp.StatusCode)
}

// TestEndlessInterimResponses: an origin that sends 1xx responses forever
// gets a 502 after a bounded number, without filling the spool.
func TestEndlessInterimResponses(t *testing.T) {
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		if _, _, err := readHead(br); err != nil {
			return
		}
		hint := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", 1000)
		deadline := time.Now().Add(6 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-o.stop:
				return
			default:
			}
			if _, err := io.WriteString(c, hint); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond) // ~6 MB/s, to keep the test's disk use small
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p := proxytest.Start(t, nil)
	resp, _, err := rawGet(t, p, "GET", "http://"+origin.addr()+"/hints", 4*time.Second)
	st, _ := http.Get(p.URL.String() + "/status")
	var disk string
	if st != nil {
		b, _ := io.ReadAll(st.Body)
		st.Body.Close()
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "spool_disk_bytes") {
				disk = strings.TrimSpace(l)
			}
		}
	}
	t.Logf("while the exchange waits: %s", disk)
	require.NoError(t, err, "no answer within 4 s: the proxy is still reading 1xx responses (%s)", disk)
	require.Equal(t, 502, resp.StatusCode)
}

// TestEndlessInterimResponsesExpectContinue: the same with Expect:
// 100-continue, which once recursed until the stack overflowed (run in a
// child process, since such a crash takes the test binary down).
func TestEndlessInterimResponsesExpectContinue(t *testing.T) {
	if os.Getenv("REVIEW_STACK_CHILD") == "1" {
		origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
			if _, _, err := readHead(br); err != nil {
				return
			}
			proc := strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 4096)
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				if _, err := io.WriteString(c, proc); err != nil {
					return
				}
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		})
		p := proxytest.Start(t, nil)
		client := p.Client()
		client.Transport.(*http.Transport).ExpectContinueTimeout = 30 * time.Second
		req, _ := http.NewRequest("POST", "http://"+origin.addr()+"/upload", strings.NewReader("body"))
		req.Header.Set("Expect", "100-continue")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEndlessInterimResponsesExpectContinue$", "-test.v")
	cmd.Env = append(os.Environ(), "REVIEW_STACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	s := string(out)
	if i := strings.Index(s, "goroutine stack exceeds"); i >= 0 {
		t.Fatalf("the proxy process crashed (recursion in awaitContinue: %v):\n%s",
			strings.Contains(s, "proxy.(*upstream).awaitContinue"), s[i:min(len(s), i+400)])
	}
	require.NoError(t, err, "child: %s", lastLines(s, 20))
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// TestNoReuseAfterFailedBodySend: the origin answers 413 and closes before
// the body is sent; that connection is not pooled, and the next request to
// the origin works.
func TestNoReuseAfterFailedBodySend(t *testing.T) {
	origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
		for {
			line, n, err := readHead(br)
			if err != nil {
				return
			}
			if strings.Contains(line, "/upload") {
				_, _ = io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n\r\nbig")
				time.Sleep(50 * time.Millisecond)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				return // close without reading the body
			}
			if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	p := proxytest.Start(t, nil)
	big := strings.Repeat("x", 8<<20)
	c1 := p.Client()
	resp, err := c1.Post("http://"+origin.addr()+"/upload", "application/octet-stream", strings.NewReader(big))
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Logf("first request: %d", resp.StatusCode)
	} else {
		t.Logf("first request: %v", err)
	}
	time.Sleep(100 * time.Millisecond)

	c2 := p.Client()
	resp, err = c2.Post("http://"+origin.addr()+"/small", "text/plain", strings.NewReader("hello"))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "second request reused a broken pooled connection: %s", body)
}

// TestStrayBytesOnIdleConn: bytes an origin sends on an idle connection (a
// stray CRLF, an unsolicited response) never end up in the next exchange.
func TestStrayBytesOnIdleConn(t *testing.T) {
	for _, tc := range []struct{ name, stray string }{
		{"crlf", "\r\n"},
		{"unsolicited-response", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := newScriptOrigin(t, func(o *scriptOrigin, _ int64, c net.Conn, br *bufio.Reader) {
				for {
					line, _, err := readHead(br)
					if err != nil {
						return
					}
					if strings.Contains(line, "/a ") {
						_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
						time.Sleep(100 * time.Millisecond)
						_, _ = io.WriteString(c, tc.stray)
						continue
					}
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			p := proxytest.Start(t, nil)
			client := p.Client()
			want := map[string]string{"/a": "hello", "/b": "ok"}
			var problems []string
			for _, path := range []string{"/a", "/b"} {
				resp, err := client.Get("http://" + origin.addr() + path)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != want[path] {
					problems = append(problems, fmt.Sprintf("client got %d %q for %s", resp.StatusCode, body, path))
				}
				time.Sleep(300 * time.Millisecond)
			}
			p.Stop()
			res := byType(t, warccheck.Dir(t, p.Dir), "response")
			if r, ok := res["http://"+origin.addr()+"/b"]; !ok {
				problems = append(problems, "no record for /b")
			} else if !strings.HasSuffix(string(r.Block), "\r\n\r\nok") {
				problems = append(problems, fmt.Sprintf("record for /b holds %q", r.Block))
			}
			require.Empty(t, problems)
		})
	}
}

// TestStaleIdleConns: pooled connections the origin closed are noticed
// before use, for requests with bodies too.
func TestStaleIdleConns(t *testing.T) {
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(100 * time.Millisecond)
		_, _ = io.WriteString(w, "ok")
	}))
	origin.Config.IdleTimeout = 200 * time.Millisecond
	origin.Start()
	defer origin.Close()
	p := proxytest.Start(t, nil)

	warm := func(n int) { // leaves n idle connections to the origin in the pool
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := p.Client().Get(origin.URL + "/warm")
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		time.Sleep(600 * time.Millisecond) // the origin closes them
	}
	t.Run("post", func(t *testing.T) {
		warm(1)
		resp, err := p.Client().Post(origin.URL+"/form", "application/x-www-form-urlencoded", strings.NewReader("q=1"))
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "%s", body)
	})
	t.Run("get-two-stale", func(t *testing.T) {
		warm(3)
		resp, err := p.Client().Get(origin.URL + "/page")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "%s", body)
	})
}

// TestIdleOriginConnsReleased: idle origin connections that the origin
// closed are closed by the proxy soon after (no CLOSE_WAIT build-up over
// many hosts).
func TestIdleOriginConnsReleased(t *testing.T) {
	const hosts = 20
	p := proxytest.Start(t, nil)
	client := p.Client()
	client.Transport.(*http.Transport).DisableKeepAlives = true
	ports := map[int]bool{}
	for range hosts {
		origin := httptest.NewServer(echoOrigin())
		resp, err := client.Get(origin.URL + "/x")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ports[origin.Listener.Addr().(*net.TCPAddr).Port] = true
		origin.Close() // the origin closes every connection
	}
	var n int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n = closeWaitTo(t, ports); n == 0 {
			break
		}
	}
	require.Zero(t, n, "%d proxy sockets to origins that closed them are still open (CLOSE_WAIT)", n)
}

// closeWaitTo counts IPv4 sockets in CLOSE_WAIT whose remote port is in ports.
func closeWaitTo(t *testing.T, ports map[int]bool) int {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip("no /proc/net/tcp")
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "08" { // 08 = CLOSE_WAIT
			continue
		}
		_, portHex, _ := strings.Cut(f[2], ":")
		port, _ := strconv.ParseInt(portHex, 16, 32)
		if ports[int(port)] {
			n++
		}
	}
	return n
}

// TestStalePreconn: the connection dialed at CONNECT time is not used if the
// origin dropped it while the client was silent (browser preconnect).
func TestStalePreconn(t *testing.T) {
	origin := httptest.NewUnstartedServer(echoOrigin())
	origin.Config.ReadHeaderTimeout = 300 * time.Millisecond
	origin.Config.ErrorLog = nil
	origin.StartTLS()
	defer origin.Close()
	p := proxytest.Start(t, nil)
	addr := strings.TrimPrefix(origin.URL, "https://")
	// The client's first request comes a second later.
	resp, body := mitmGet(t, p, addr, "127.0.0.1", time.Second, "GET /late HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	require.Equal(t, 200, resp.StatusCode, "%s", body)
}

// TestNonIdempotentNotRetried: a request that is not safe to repeat is never
// sent twice (RFC 9110 9.2.2).
func TestNonIdempotentNotRetried(t *testing.T) {
	var deletes atomic.Int64
	origin := newScriptOrigin(t, func(o *scriptOrigin, n int64, c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			line, _, err := readHead(br)
			if err != nil {
				return
			}
			if strings.HasPrefix(line, "DELETE") {
				deletes.Add(1)
				if n == 1 {
					return // processed, then the connection drops
				}
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	p := proxytest.Start(t, nil)
	client := p.Client()
	resp, err := client.Get("http://" + origin.addr() + "/warm")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ := http.NewRequest("DELETE", "http://"+origin.addr()+"/item/1", nil)
	resp, err = client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	require.EqualValues(t, 1, deletes.Load(), "the origin received the DELETE %d times", deletes.Load())
}

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

// TestWarcproxMetaNotForwarded: the crawler's Warcprox-Meta header reaches
// neither the origin nor the request record.
func TestWarcproxMetaNotForwarded(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Warcprox-Meta")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	req, _ := http.NewRequest("GET", origin.URL+"/meta", nil)
	req.Header.Set("Warcprox-Meta", `{"warc-prefix":"job-42","stats":{"buckets":["secret-bucket"]}}`)
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, <-got, "the origin received the crawler's Warcprox-Meta header")
}

// TestH2CUpgradeNotForwarded: an "Upgrade: h2c" request is not passed on
// (HTTP/2 on a spliced connection would not be recorded).
func TestH2CUpgradeNotForwarded(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Upgrade")
	}))
	defer origin.Close()
	p := proxytest.Start(t, nil)
	req, _ := http.NewRequest("GET", origin.URL+"/page", nil)
	req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
	req.Header.Set("Upgrade", "h2c")
	req.Header.Set("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")
	resp, err := p.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, "h2c", <-got, "h2c upgrade forwarded: an accepting origin's answer would bypass the recorder")
}

// TestLimitListenerShutdownUnderChurn: connections waiting for a --max-conns
// slot during shutdown do not crash the process (run in a child process).
func TestLimitListenerShutdownUnderChurn(t *testing.T) {
	if os.Getenv("REVIEW_LL_CHILD") == "1" {
		for round := range 40 {
			p := proxytest.Start(t, func(c *config.Config) {
				c.MaxConns = 2
				c.ConnWaitTimeout = time.Minute
			})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 200 { // churn: slots are taken and freed all the time
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						c, err := net.Dial("tcp", p.URL.Host)
						if err != nil {
							return
						}
						_ = c.SetDeadline(time.Now().Add(2 * time.Second))
						_, _ = io.WriteString(c, "GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
						_, _ = io.Copy(io.Discard, c)
						c.Close()
					}
				}()
			}
			time.Sleep(150 * time.Millisecond)
			p.Stop()
			close(stop)
			wg.Wait()
			t.Logf("round %d ok", round)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLimitListenerShutdownUnderChurn$", "-test.v")
	cmd.Env = append(os.Environ(), "REVIEW_LL_CHILD=1")
	out, err := cmd.CombinedOutput()
	s := string(out)
	if i := strings.Index(s, "panic: send on closed channel"); i >= 0 {
		t.Fatalf("the proxy process panicked during Shutdown:\n%s", s[i:min(len(s), i+600)])
	}
	require.NoError(t, err, "child: %s", lastLines(s, 20))
}
