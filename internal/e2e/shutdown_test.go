package e2e

// Shutdown under load: exchanges still running at the deadline are cut,
// and connections waiting for a --max-conns slot end cleanly.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
	"github.com/warcproxy/warcproxy/internal/testutil/warccheck"
)

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

// TestLimitListenerShutdownUnderChurn: connections waiting for a --max-conns
// slot during shutdown do not crash the process (run in a child process).
func TestLimitListenerShutdownUnderChurn(t *testing.T) {
	if os.Getenv("SHUTDOWN_CHURN_CHILD") == "1" {
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
	cmd.Env = append(os.Environ(), "SHUTDOWN_CHURN_CHILD=1")
	out, err := cmd.CombinedOutput()
	s := string(out)
	if i := strings.Index(s, "panic: send on closed channel"); i >= 0 {
		t.Fatalf("the proxy process panicked during Shutdown:\n%s", s[i:min(len(s), i+600)])
	}
	require.NoError(t, err, "child: %s", lastLines(s, 20))
}

// TestShutdownWithAClientThatNeverReads: a client that asks for a large
// body and never reads it (the proxy's writes to it block) cannot hold a
// shutdown past --shutdown-timeout; what was fetched for it is written,
// marked truncated.
func TestShutdownWithAClientThatNeverReads(t *testing.T) {
	big := strings.Repeat("x", 64<<20)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, big)
	}))
	defer origin.Close()
	p := proxytest.Start(t, func(c *config.Config) { c.ShutdownTimeout = 2 * time.Second })
	conn, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s/big HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, strings.TrimPrefix(origin.URL, "http://"))
	require.Eventually(t, func() bool { return p.Status(t)["active_requests"].(float64) == 1 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // the proxy's writes to the client fill the socket buffers

	start := time.Now()
	err = p.Shutdown()
	require.Less(t, time.Since(start), 2*time.Second+2*time.Second, "shutdown within --shutdown-timeout")
	require.ErrorContains(t, err, "1 exchange in flight cut")
	recs := principal(warccheck.Dir(t, p.Dir))
	require.Len(t, recs, 1)
	require.Equal(t, "disconnect", recs[0].Header["WARC-Truncated"])
}

// TestShutdownNotHeldBySilentConnections: connections on which no request
// has been read (a browser's spare connection, a tunnel whose client
// finished its TLS handshake and went quiet, a request head never
// finished) do not hold a stop for the 5 s net/http waits for a first
// request; the proxy closes them.
func TestShutdownNotHeldBySilentConnections(t *testing.T) {
	origin := newRawOrigin(t, true, nil)
	p := proxytest.Start(t, nil) // --shutdown-timeout 30 s

	silent, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer silent.Close()
	tun, err := dialConnect(t.Context(), p.URL.Host, origin.addr())
	require.NoError(t, err)
	defer tun.Close()
	quietTLS := tls.Client(tun, &tls.Config{RootCAs: p.CAPool, ServerName: "127.0.0.1"})
	require.NoError(t, quietTLS.Handshake())
	// Half a request head, never finished (--header-timeout is 30 s).
	partial, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer partial.Close()
	_, err = io.WriteString(partial, "GET http://"+origin.addr()+"/ HTTP/1.1\r\nHost: ")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // the proxy's servers have them all

	start := time.Now()
	require.NoError(t, p.Shutdown())
	t.Logf("shutdown took %s", time.Since(start))
	require.Less(t, time.Since(start), 3*time.Second, "silent connections held the stop")
	for _, c := range []net.Conn{silent, quietTLS, partial} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Read(make([]byte, 1))
		// EOF, or a reset when the proxy closed it with unread bytes.
		require.Error(t, err)
		require.False(t, os.IsTimeout(err), "the proxy closed the silent connection: %v", err)
	}
}

// TestShutdownCutsAStalledUpload: a WARCPROX_WRITE_RECORD whose body stops
// coming is cut at the shutdown deadline, and the stop says so (exit 1):
// its record is not written.
func TestShutdownCutsAStalledUpload(t *testing.T) {
	p := proxytest.Start(t, func(c *config.Config) { c.ShutdownTimeout = time.Second })
	conn, err := net.Dial("tcp", p.URL.Host)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "WARCPROX_WRITE_RECORD screenshot:http://example.com/ HTTP/1.1\r\nHost: example.com\r\n"+
		"WARC-Type: resource\r\nContent-Type: image/png\r\nContent-Length: 1000\r\n\r\nonly ten b")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Status(t)["active_requests"] == float64(1) }, 5*time.Second, 10*time.Millisecond,
		"the upload is being read")

	err = p.Shutdown()
	require.ErrorContains(t, err, "1 WARCPROX_WRITE_RECORD uploads cut")
	for _, r := range warccheck.Dir(t, p.Dir) {
		require.Equal(t, "warcinfo", r.Type, "nothing but the warcinfo is written")
	}
}
