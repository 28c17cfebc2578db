package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/bench"
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

// TestStalledRequestBody: a client that announces an absurd Content-Length,
// sends a few bytes and stalls is cut off after --socket-timeout (408), the
// origin connection is closed, and its --max-conns slot comes free. A
// response streamed for longer than the socket timeout after a request body
// is not mistaken for the client leaving.
func TestStalledRequestBody(t *testing.T) {
	originGot := make(chan int64, 4)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		originGot <- n
		if r.URL.Path == "/slow-answer" {
			// Streamed over 1.2 s, longer than the socket timeout, each
			// gap within it.
			for range 4 {
				fmt.Fprint(w, ".")
				w.(http.Flusher).Flush()
				time.Sleep(300 * time.Millisecond)
			}
		}
		fmt.Fprint(w, "ok")
	}))
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.SocketTimeout = 500 * time.Millisecond
		c.MaxConns = 1
	})

	conn, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s/upload HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000000000\r\n\r\nabc", origin.URL, strings.TrimPrefix(origin.URL, "http://"))
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	reply, _ := io.ReadAll(conn) // the proxy answers or closes
	require.Less(t, time.Since(start), 15*time.Second, "cut off, not held")
	if len(reply) > 0 {
		require.Contains(t, string(reply), "408 Request Timeout", "a reply, if any, says the client's body stalled")
	}
	require.LessOrEqual(t, <-originGot, int64(3), "the origin connection is closed, not left waiting for the body")

	// The single slot is free again: a normal request goes through.
	c := p.Client()
	resp, body := fetch(t, c, origin.URL+"/after", "")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "ok", body)
	<-originGot

	// A request body followed by an answer slower than the socket timeout
	// (the origin's own pace, well within the fetch) still completes.
	req, _ := http.NewRequest(http.MethodPost, origin.URL+"/slow-answer", strings.NewReader("payload"))
	resp, err = c.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "....ok", string(b))
	<-originGot
}

// TestSlowloris: with --max-conns above 1,000, 1,000 connections that
// trickle their request headers a byte at a time do not stop a normal
// client, --header-timeout closes them, and connection accounting comes
// back to zero.
func TestSlowloris(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "normal "+r.URL.Path)
	}))
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) {
		c.MaxConns = 1100
		// Long enough for all 1,000 to be dialed and held at once on a
		// loaded machine under -race (with 2 s the first were cut before
		// the last arrived), far shorter than a head trickled at 10
		// bytes a second takes.
		c.HeaderTimeout = 8 * time.Second
		// /status on a listener of its own: reading it is not counted.
		c.MetricsAddress = "127.0.0.1:0"
	})
	const slow = 1000
	head := "GET " + origin.URL + "/slow HTTP/1.1\r\nHost: x\r\nX-Padding: " + strings.Repeat("a", 200) + "\r\n\r\n"
	closedByProxy := make(chan bool, slow)
	for range slow {
		c, err := net.Dial("tcp", p.URL.Host)
		require.NoError(t, err)
		go func() {
			defer c.Close()
			for i := range len(head) {
				if _, err := c.Write([]byte{head[i]}); err != nil {
					closedByProxy <- true
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			closedByProxy <- false // sent it all: not cut off
		}()
	}
	// Wait until the proxy holds them all.
	require.Eventually(t, func() bool {
		return p.Status(t)["connections_active"].(float64) >= slow
	}, 20*time.Second, 20*time.Millisecond)

	// A normal client is served meanwhile.
	c := p.Client()
	for i := range 50 {
		resp, body := fetch(t, c, fmt.Sprintf("%s/n%d", origin.URL, i), "")
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, fmt.Sprintf("normal /n%d", i), body)
	}
	c.CloseIdleConnections()

	// --header-timeout closes every slow connection: a write fails once the
	// proxy has closed it (a reset, or EPIPE).
	cut := 0
	deadline := time.After(60 * time.Second)
	for range slow {
		select {
		case v := <-closedByProxy:
			if v {
				cut++
			}
		case <-deadline:
			t.Fatalf("slow connections still open after 60 s (%d cut)", cut)
		}
	}
	require.Equal(t, slow, cut, "every trickling connection was cut")
	require.Eventually(t, func() bool {
		st := p.Status(t)
		return st["connections_active"] == float64(0) && st["connections_waiting"] == float64(0)
	}, 10*time.Second, 20*time.Millisecond, "connection accounting back to zero")
}

// scriptedOrigin answers each request by the path's script, then closes
// the connection (with a TCP reset when the script says so).
func scriptedOrigin(t *testing.T, scripts map[string]func(c *net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if script := scripts[req.URL.Path]; script != nil {
					script(c.(*net.TCPConn))
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func reset(c *net.TCPConn) { _ = c.SetLinger(0); _ = c.Close() }

// TestBrokenUpstreams: origins that break the protocol get the client a
// 502 with a reason when nothing usable arrived, or an aborted response
// (never a clean end) and a record marked truncated when the break comes
// mid-body; the proxy goes on serving.
func TestBrokenUpstreams(t *testing.T) {
	origin := scriptedOrigin(t, map[string]func(c *net.TCPConn){
		"/reset-in-head": func(c *net.TCPConn) { _, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le"); reset(c) },
		"/empty":         func(c *net.TCPConn) {},
		"/bad-status":    func(c *net.TCPConn) { _, _ = io.WriteString(c, "HTTP/1.1 abc OK\r\n\r\n") },
		"/not-http":      func(c *net.TCPConn) { _, _ = io.WriteString(c, "hello, world\r\n\r\n") },
		"/two-lengths": func(c *net.TCPConn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
		},
		"/unasked-101": func(c *net.TCPConn) {
			_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhello")
		},
		"/huge-head": func(c *net.TCPConn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
			for range 3000 {
				if _, err := io.WriteString(c, "X-Filler: "+strings.Repeat("f", 500)+"\r\n"); err != nil {
					return
				}
			}
		},
		"/bad-chunk": func(c *net.TCPConn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n")
		},
		"/reset-in-body": func(c *net.TCPConn) {
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("b", 1000))
			time.Sleep(50 * time.Millisecond)
			reset(c)
		},
	})
	p := proxytest.Start(t, nil)
	c := p.Client()
	for _, tt := range []struct {
		path   string
		status int
		reason string
	}{
		{"/reset-in-head", 502, "upstream"},
		{"/empty", 502, "closed the connection before a complete response"},
		{"/bad-status", 502, "bad upstream response"},
		{"/not-http", 502, "bad upstream response"},
		{"/two-lengths", 502, "bad upstream response"},
		{"/unasked-101", 502, "switched protocols (101) for a request that did not ask to"},
		{"/huge-head", 502, "bad upstream response"},
	} {
		resp, body := fetch(t, c, origin+tt.path, "")
		require.Equal(t, tt.status, resp.StatusCode, "%s: %s", tt.path, body)
		require.Contains(t, body, tt.reason, tt.path)
	}
	for _, path := range []string{"/bad-chunk", "/reset-in-body"} {
		resp, err := c.Get(origin + path)
		require.NoError(t, err, path)
		require.Equal(t, 200, resp.StatusCode, path)
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Error(t, err, "%s: the client must see the body is incomplete", path)
	}
	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response")
	require.Len(t, res, 2, "only the responses that got past their head are recorded")
	for _, path := range []string{"/bad-chunk", "/reset-in-body"} {
		require.Equal(t, "disconnect", res[origin+path].Header["WARC-Truncated"], path)
	}
}

// TestBadChunkReachesTheClient: when an origin's chunked body breaks off
// with junk that arrived together with the good chunk before it, the
// client still gets the status line and the good bytes before the cut.
// With no status line, Go's client and browsers take the request for never
// answered and send it again, which recorded the exchange several times.
func TestBadChunkReachesTheClient(t *testing.T) {
	origin := httptest.NewServer(bench.NewOrigin())
	defer origin.Close()
	p := proxytest.Start(t, nil)
	c := p.Client()
	for i := range 3 {
		url := fmt.Sprintf("%s/garbage/chunk?i=%d", origin.URL, i)
		resp, err := c.Get(url)
		require.NoError(t, err, "the client gets the head")
		require.Equal(t, 200, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the client sees the body is cut")
		require.Len(t, body, 1024, "the good chunk reaches the client")
	}
	p.Stop()
	res := byType(t, warccheck.Dir(t, p.Dir), "response") // fails on two records for one URL
	require.Len(t, res, 3)
	for uri, r := range res {
		require.Equal(t, "disconnect", r.Header["WARC-Truncated"], uri)
	}
}

// TestVerifyUpstreamTLS: with --verify-upstream-tls, an origin whose
// certificate does not verify gets the client a 502 naming the reason;
// without it (the default) the page is fetched and recorded.
func TestVerifyUpstreamTLS(t *testing.T) {
	origin := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "self-signed")
	}))
	defer origin.Close()
	strict := proxytest.Start(t, func(c *config.Config) { c.VerifyUpstreamTLS = true })
	resp, body := fetch(t, strict.Client(), origin.URL+"/", "")
	require.Equal(t, 502, resp.StatusCode)
	require.Contains(t, body, "certificate", "the reason is in the body")

	lax := proxytest.Start(t, nil)
	resp, body = fetch(t, lax.Client(), origin.URL+"/", "")
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "self-signed", body)
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
