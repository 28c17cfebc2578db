package e2e

// The pool of idle origin connections: a connection is reused only if the
// origin has neither closed it nor sent anything unasked, and a request
// that fails on a reused connection is retried only when that is safe.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

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
