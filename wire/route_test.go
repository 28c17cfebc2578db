package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAbsoluteHead(t *testing.T) {
	for _, tc := range []struct{ name, head, auth, want string }{
		{"get", "GET /a?b HTTP/1.1\r\nHost: example.com\r\n\r\n", "",
			"GET http://example.com:80/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{"with credentials", "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1\r\n\r\n", "Basic dTpw",
			"POST http://example.com:80/ HTTP/1.1\r\nProxy-Authorization: Basic dTpw\r\nHost: example.com\r\nContent-Length: 1\r\n\r\n"},
		{"options star", "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n", "",
			"OPTIONS http://example.com:80 HTTP/1.1\r\nHost: example.com\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, string(absoluteHead([]byte(tc.head), "http://example.com:80", tc.auth)))
		})
	}
}

func TestRouteFor(t *testing.T) {
	u := NewClient(Options{Route: Route{SOCKS: "127.0.0.1:1080"}, TorSOCKS: "127.0.0.1:9050"})
	require.Equal(t, RouteTor, u.routeFor("abcdef.onion:80").kind)
	require.Equal(t, RouteTor, u.routeFor("www.ABCDEF.Onion.:443").kind)
	require.Equal(t, RouteSOCKS, u.routeFor("example.com:80").kind)
	require.Equal(t, RouteSOCKS, u.routeFor("onion.example:80").kind)
	direct := NewClient(Options{TorSOCKS: "127.0.0.1:9050"})
	require.Nil(t, direct.routeFor("example.com:80"))
}

// TestCheckRoutedDenyPrivate: with a route the target is checked before
// dialing: IP literals as they are, names by their local resolution, and
// names that do not resolve here pass to the route.
func TestCheckRoutedDenyPrivate(t *testing.T) {
	u := NewClient(Options{DenyPrivateTargets: true, Route: Route{SOCKS: "127.0.0.1:1080"}})
	ctx := context.Background()
	for _, tc := range []struct {
		target string
		denied bool
	}{
		{"10.1.2.3:80", true},
		{"[fd00::1]:443", true},
		{"127.0.0.1:8080", true},
		{"localhost:80", true}, // resolves here to loopback
		{"192.0.2.10:80", false},
		{"no-such-name.invalid:80", false},
		{"abcdefghij.onion:80", false},
	} {
		err := u.checkRouted(ctx, u.route, tc.target)
		require.Equal(t, tc.denied, errors.Is(err, ErrPrivateTarget), "%s: %v", tc.target, err)
	}
	open := NewClient(Options{Route: Route{SOCKS: "127.0.0.1:1080"}})
	require.NoError(t, open.checkRouted(ctx, open.route, "10.1.2.3:80"))
}

// parentStub is a parent proxy that answers every request with answer and
// hands over what it read.
func parentStub(t *testing.T, answer string) (addr string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	ch := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		var b bytes.Buffer
		b.WriteString(req.Method + " " + req.RequestURI + "\n")
		_ = req.Header.Write(&b)
		ch <- b.String()
		_, _ = c.Write([]byte(answer))
	}()
	return ln.Addr().String(), ch
}

func TestParentConnectRefusedNamesParentNotPassword(t *testing.T) {
	addr, got := parentStub(t, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
	u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: Route{Parent: addr, ParentUser: "u", ParentPassword: "s3cret-pw"}})
	_, err := u.DialTCP(context.Background(), "example.com:443")
	var re *RouteError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "auth", re.Reason)
	require.Equal(t, "upstream proxy "+addr+": refused CONNECT to example.com:443: 407 Proxy Authentication Required", err.Error())
	seen := <-got
	require.Contains(t, seen, "CONNECT example.com:443\n")
	require.Contains(t, seen, "Proxy-Authorization: Basic dTpzM2NyZXQtcHc=")
}

// TestParentForwardRecordsOriginForm: the parent gets the absolute form
// and its credentials, the request record the origin-form head.
func TestParentForwardRecordsOriginForm(t *testing.T) {
	addr, got := parentStub(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: Route{Parent: addr, ParentUser: "u", ParentPassword: "pw"}})
	c, err := u.Get(context.Background(), "http", "example.com:80", "", nil, false)
	require.NoError(t, err)
	defer c.Close()
	require.Empty(t, c.IP(), "the origin's address is unknown")
	head := "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n"
	var rec bytes.Buffer
	resp, _, err := u.RoundTrip(c, &Outbound{Method: "GET", Head: []byte(head), Length: 0, ReqRec: &rec})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, head, rec.String())
	seen := <-got
	require.True(t, strings.HasPrefix(seen, "GET http://example.com:80/x\n"), seen)
	require.Contains(t, seen, "Proxy-Authorization: Basic dTpwdw==")
}

func TestDeadRouteNamesIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		opts Options
		name string
	}{
		{Options{Route: Route{SOCKS: dead, SOCKSUser: "u", SOCKSPassword: "s3cret-pw"}}, "socks proxy " + dead + ": "},
		{Options{Route: Route{Parent: dead}}, "upstream proxy " + dead + ": "},
	} {
		u := NewClient(tc.opts)
		_, err := u.DialTCP(context.Background(), "example.com:80")
		var re *RouteError
		require.ErrorAs(t, err, &re)
		require.Equal(t, "refused", re.Reason)
		require.True(t, strings.HasPrefix(err.Error(), tc.name), err.Error())
		require.NotContains(t, err.Error(), "s3cret-pw")
	}
}

// stallStub is a route that writes greeting (a SOCKS server's choice of
// method, or nothing for a parent proxy) and then reads and never answers,
// as a wedged Tor does.
func stallStub(t *testing.T, greeting []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write(greeting)
		_, _ = io.Copy(io.Discard, c)
	}()
	return ln.Addr().String()
}

// TestRouteHandshakeCancelled: a CONNECT through a route that never
// answers, cancelled (the client left, the proxy shuts down), fails with
// the cancel, not as the route's or the origin's timeout; one that runs out
// of the socket timeout is still a timeout.
func TestRouteHandshakeCancelled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		route    func(addr string) Route
		greeting []byte
	}{
		{"socks", func(addr string) Route { return Route{SOCKS: addr} }, []byte{5, 0}},
		{"parent", func(addr string) Route { return Route{Parent: addr} }, nil},
	} {
		t.Run(tc.name+"/cancelled", func(t *testing.T) {
			u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: tc.route(stallStub(t, tc.greeting))})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := u.DialTCP(ctx, "192.0.2.1:80")
			require.ErrorIs(t, err, context.Canceled)
			require.Less(t, time.Since(start), 4*time.Second)
			var re *RouteError
			require.False(t, errors.As(err, &re), "not the route's: %v", err)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "not a timeout: %v", err)
		})
		t.Run(tc.name+"/cancelled before the dial", func(t *testing.T) {
			u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: tc.route(stallStub(t, tc.greeting))})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := u.DialTCP(ctx, "192.0.2.1:80")
			require.ErrorIs(t, err, context.Canceled)
			var re *RouteError
			require.False(t, errors.As(err, &re), "not the route's: %v", err)
		})
		t.Run(tc.name+"/socket timeout", func(t *testing.T) {
			u := NewClient(Options{SocketTimeout: 200 * time.Millisecond, Route: tc.route(stallStub(t, tc.greeting))})
			_, err := u.DialTCP(context.Background(), "192.0.2.1:80")
			require.NotErrorIs(t, err, context.Canceled)
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "a timeout: %v", err)
		})
	}
}
