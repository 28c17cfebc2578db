package wire

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Route is how the client reaches origins when not directly: through a
// SOCKS5 proxy or through a parent HTTP proxy (at most one of the two).
// Credentials are kept here only; no error or log line carries them.
type Route struct {
	SOCKS          string // host:port of a SOCKS5 proxy
	SOCKSUser      string
	SOCKSPassword  string
	Parent         string // host:port of a parent HTTP proxy
	ParentUser     string
	ParentPassword string
}

// Route kinds, also the route label of the route error metric.
const (
	RouteSOCKS  = "socks"
	RouteTor    = "tor"
	RouteParent = "parent"
)

// RouteReasons are the values of RouteError.Reason.
var RouteReasons = []string{"refused", "timeout", "auth", "rejected", "dns", "other"}

// RouteKinds lists the kinds of the routes o configures.
func (o Options) RouteKinds() []string {
	var kinds []string
	switch {
	case o.Route.SOCKS != "":
		kinds = append(kinds, RouteSOCKS)
	case o.Route.Parent != "":
		kinds = append(kinds, RouteParent)
	}
	if o.TorSOCKS != "" {
		kinds = append(kinds, RouteTor)
	}
	return kinds
}

// route is one way out: a SOCKS5 server (remote DNS: the host name is sent
// to it unresolved) or a parent HTTP proxy.
type route struct {
	kind      string
	addr      string
	user      string
	password  string
	proxyAuth string // Proxy-Authorization value for a parent, or ""
	// credsAccepted is when the parent last took proxyAuth for a CONNECT
	// (Unix nanoseconds; parentRefused).
	credsAccepted atomic.Int64
}

func newRoutes(o Options) (main, tor *route) {
	switch {
	case o.Route.SOCKS != "":
		main = &route{kind: RouteSOCKS, addr: o.Route.SOCKS, user: o.Route.SOCKSUser, password: o.Route.SOCKSPassword}
	case o.Route.Parent != "":
		main = &route{kind: RouteParent, addr: o.Route.Parent}
		if o.Route.ParentUser != "" || o.Route.ParentPassword != "" {
			creds := o.Route.ParentUser + ":" + o.Route.ParentPassword
			main.proxyAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(creds))
		}
	}
	if o.TorSOCKS != "" {
		tor = &route{kind: RouteTor, addr: o.TorSOCKS}
	}
	return main, tor
}

// routeFor picks the route to hostport: .onion names always take the Tor
// route when there is one; anything else takes the configured route (nil:
// dial directly).
func (u *Client) routeFor(hostport string) *route {
	if u.tor != nil && isOnion(hostport) {
		return u.tor
	}
	return u.route
}

func isOnion(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return strings.HasSuffix(host, ".onion")
}

// dialVia opens a connection to hostport through rt: a SOCKS5 CONNECT or
// an HTTP CONNECT to the parent. The whole handshake is bounded by the
// socket timeout.
func (u *Client) dialVia(ctx context.Context, rt *route, hostport string) (net.Conn, error) {
	if err := u.checkRouted(ctx, rt, hostport); err != nil {
		return nil, err
	}
	if u.socketTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, u.socketTimeout)
		defer cancel()
	}
	if rt.kind == RouteParent {
		return u.connectParent(ctx, rt, hostport)
	}
	return u.dialSOCKS(ctx, rt, hostport)
}

// dialRoute opens a TCP connection to the route's own address. It may be
// loopback or private whatever --deny-private-targets says: the operator
// chose it.
func (u *Client) dialRoute(ctx context.Context, rt *route) (net.Conn, error) {
	c, err := u.routeDialer.DialContext(ctx, "tcp", rt.addr)
	if err != nil {
		if cut := cutShort(ctx, "connecting to "+rt.name()); cut != nil {
			return nil, cut
		}
		return nil, rt.fail(dialReason(err), err)
	}
	return c, nil
}

// RouteError is a failure of the route itself: the SOCKS server or the
// parent proxy could not be reached, refused the credentials or the
// target. Its message names the route by kind and address.
type RouteError struct {
	Route  string // RouteSOCKS, RouteTor or RouteParent
	Addr   string // the route's host:port
	Reason string // refused, timeout, auth, rejected, dns or other
	Err    error
}

func (e *RouteError) Error() string {
	return routeNames[e.Route] + " " + e.Addr + ": " + e.Err.Error()
}

// through marks err, a request to the parent proxy that got no response,
// as having gone through it: the parent or the origin behind it may be at
// fault, so the message says which way the request went, while the error
// keeps its kind (a timeout may be the origin's slowness). A failure to
// read the client's own body is left alone.
func (rt *route) through(err error) error {
	var cbe *ClientBodyError
	if errors.As(err, &cbe) {
		return err
	}
	return fmt.Errorf("%w (through %s)", err, rt.name())
}

// name is the route as messages name it: kind and address, never the
// credentials.
func (rt *route) name() string { return routeNames[rt.kind] + " " + rt.addr }

// routeNames are the routes as messages name them.
var routeNames = map[string]string{RouteSOCKS: "socks proxy", RouteTor: "tor socks proxy", RouteParent: "upstream proxy"}

func (e *RouteError) Unwrap() error { return e.Err }

// Timeout lets a route that did not answer in time be told from one that
// failed (504 rather than 502).
func (e *RouteError) Timeout() bool { return e.Reason == "timeout" }

func (rt *route) fail(reason string, err error) *RouteError {
	return &RouteError{Route: rt.kind, Addr: rt.addr, Reason: reason, Err: err}
}

// dialReason classifies a failure to open a connection.
func dialReason(err error) string {
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	}
	return "other"
}

// handshakeDeadline applies ctx's deadline to c for a route handshake and
// cuts the handshake short when ctx ends; the returned func lifts both.
func handshakeDeadline(ctx context.Context, c net.Conn) func() {
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		_ = c.SetDeadline(time.Time{})
	}
}

// cutShort is the error for a dial to the route or a handshake with it
// that failed because ctx was cancelled (the client left, the proxy is
// shutting down), or nil if ctx was not. handshakeDeadline turns the
// cancel into a deadline in the past, so the failure looks like a timeout,
// yet it is neither the route's nor the origin's: the error is the
// cancel's cause, with what was being done. A ctx that reached its own
// deadline (the socket timeout) was not cancelled: that stays a timeout.
func cutShort(ctx context.Context, doing string) error {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return fmt.Errorf("%s: %w", doing, context.Cause(ctx))
}
