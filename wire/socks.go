package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/net/proxy"
)

// dialSOCKS asks the route's SOCKS5 server to connect to hostport, sending
// the host name unresolved (remote DNS: names only the SOCKS side can
// resolve, .onion ones among them, still work). It returns the TCP
// connection to the SOCKS server itself, which is the tunnel once the
// handshake is done, so the idle-connection check can peek at its socket.
func (u *Client) dialSOCKS(ctx context.Context, rt *route, hostport string) (net.Conn, error) {
	fw := &keepDialer{u: u, rt: rt}
	var auth *proxy.Auth
	if rt.user != "" || rt.password != "" {
		auth = &proxy.Auth{User: rt.user, Password: rt.password}
	}
	d, err := proxy.SOCKS5("tcp", rt.addr, auth, fw)
	if err != nil {
		return nil, rt.fail("other", err)
	}
	c, err := d.(proxy.ContextDialer).DialContext(ctx, "tcp", hostport)
	if err != nil {
		var re *RouteError
		if errors.As(err, &re) {
			return nil, re // the SOCKS server could not be reached
		}
		reason, cause := socksReason(err), socksCause(err)
		if reason == "rejected" {
			// The server answered CONNECT with a failure, which x/net
			// words "unknown error connection refused".
			cause = fmt.Errorf("could not connect to %s: %s", hostport, strings.TrimPrefix(cause.Error(), "unknown error "))
		}
		return nil, rt.fail(reason, cause)
	}
	if fw.conn == nil {
		return c, nil
	}
	return fw.conn, nil
}

// keepDialer dials the SOCKS server and keeps the connection it made.
type keepDialer struct {
	u    *Client
	rt   *route
	conn net.Conn
}

func (d *keepDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d *keepDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	c, err := d.u.dialRoute(ctx, d.rt)
	if err == nil {
		d.conn = c
	}
	return c, err
}

// socksCause strips the wrapper the SOCKS client puts around every error
// ("socks connect tcp A->B: ..."): the route error names the server.
func socksCause(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && strings.HasPrefix(oe.Op, "socks") && oe.Err != nil {
		return oe.Err
	}
	return err
}

// socksReason classifies a failed SOCKS handshake.
func socksReason(err error) string {
	msg := err.Error()
	switch {
	case dialReason(err) == "timeout":
		return "timeout"
	case strings.Contains(msg, "authentication"):
		return "auth" // wrong credentials, or none where some are needed
	case strings.Contains(msg, "unknown error"):
		return "rejected" // the server's reply to CONNECT was not success
	}
	return "other"
}
