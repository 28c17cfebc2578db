package e2e

// Raw HTTP on either side of the proxy, shared by the system tests: origins
// that answer with hand-made or scripted bytes, requests and CONNECT
// tunnels written to the proxy by hand, and the records they leave.

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base32"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// rawOrigin is an origin server that answers each request with hand-made
// bytes, so tests can compare the response record with what was on the
// wire byte for byte.
type rawOrigin struct {
	ln        net.Listener
	responses map[string]rawResponse // by request path
	mu        sync.Mutex
	requests  [][]byte // raw request bytes as received, in order
	wg        sync.WaitGroup
}

type rawResponse struct {
	interim string // sent before the body is read (e.g. 100 Continue)
	final   string
	close   bool // close the connection after the response
}

func newRawOrigin(t *testing.T, useTLS bool, responses map[string]rawResponse) *rawOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if useTLS {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{testCert(t)}})
	}
	o := &rawOrigin{ln: ln, responses: responses}
	serveConns(t, ln, &o.wg, func(c net.Conn) { o.serve(c) })
	return o
}

// serveConns runs serve for each connection accepted on ln, in its own
// goroutine, until the test ends; then it closes ln and waits for them.
func serveConns(t *testing.T, ln net.Listener, wg *sync.WaitGroup, serve func(net.Conn)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}

// serveLoopback serves each connection to a new loopback listener with
// serve until the test ends, and returns the listener's address.
func serveLoopback(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	serveConns(t, ln, &wg, serve)
	return ln.Addr().String()
}

// mitmGet sends raw (a request head) through a CONNECT tunnel to addr,
// speaking TLS with the given server name and trusting the proxy's CA,
// after keeping the tunnel silent for delay.
func mitmGet(t *testing.T, p *proxytest.Proxy, addr, serverName string, delay time.Duration, raw string) (*http.Response, string) {
	t.Helper()
	tun, err := dialConnect(t.Context(), p.URL.Host, addr)
	require.NoError(t, err)
	t.Cleanup(func() { tun.Close() })
	time.Sleep(delay)
	tc := tls.Client(tun, &tls.Config{RootCAs: p.CAPool, ServerName: serverName})
	require.NoError(t, tc.Handshake())
	_, _ = io.WriteString(tc, raw)
	_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (o *rawOrigin) addr() string { return o.ln.Addr().String() }

func (o *rawOrigin) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var raw []byte
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		raw = append(raw, line...)
		path := strings.Fields(line + " x x")[1]
		length, chunked := 0, false
		for {
			h, err := br.ReadString('\n')
			if err != nil {
				return
			}
			raw = append(raw, h...)
			if h == "\r\n" {
				break
			}
			k, v, _ := strings.Cut(strings.TrimSpace(h), ":")
			switch strings.ToLower(k) {
			case "content-length":
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			case "transfer-encoding":
				chunked = strings.Contains(strings.ToLower(v), "chunked")
			}
		}
		resp, ok := o.responses[path]
		if !ok {
			resp = rawResponse{final: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"}
		}
		if resp.interim != "" {
			_, _ = io.WriteString(c, resp.interim)
		}
		switch {
		case chunked:
			for {
				size, err := br.ReadString('\n')
				if err != nil {
					return
				}
				raw = append(raw, size...)
				n, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(size, ";", 2)[0]), 16, 64)
				if n == 0 {
					end, _ := br.ReadString('\n')
					raw = append(raw, end...)
					break
				}
				data := make([]byte, n+2)
				if _, err := io.ReadFull(br, data); err != nil {
					return
				}
				raw = append(raw, data...)
			}
		case length > 0:
			data := make([]byte, length)
			if _, err := io.ReadFull(br, data); err != nil {
				return
			}
			raw = append(raw, data...)
		}
		o.mu.Lock()
		o.requests = append(o.requests, raw)
		o.mu.Unlock()
		if _, err := io.WriteString(c, resp.final); err != nil {
			return
		}
		if resp.close {
			return
		}
	}
}

// b32sha1 is the default WARC digest of p.
func b32sha1(p []byte) string {
	s := sha1.Sum(p)
	return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
}

// byType returns the records of the given type keyed by target URI; it
// fails if a URI has more than one.
func byType(t *testing.T, recs []warccheck.Record, typ string) map[string]warccheck.Record {
	t.Helper()
	m := make(map[string]warccheck.Record)
	for _, r := range recs {
		if r.Type != typ {
			continue
		}
		if _, dup := m[r.TargetURI]; dup {
			t.Fatalf("two %s records for %s", typ, r.TargetURI)
		}
		m[r.TargetURI] = r
	}
	return m
}

// testCert is a certificate for 127.0.0.1 from httptest's test CA; the
// proxy does not verify origins by default, as an archive records them.
func testCert(t *testing.T) tls.Certificate {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	defer srv.Close()
	return srv.TLS.Certificates[0]
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

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

// lastLines is the end of a child test process's output.
func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// dialConnect opens a CONNECT tunnel to addr through the proxy at proxyAddr.
func dialConnect(ctx context.Context, proxyAddr, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("CONNECT: %s", resp.Status)
	}
	return &bufferedConn{Conn: c, r: br}, nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
