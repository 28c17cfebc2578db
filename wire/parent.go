package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// connectParent opens a tunnel to hostport through the parent HTTP proxy:
// CONNECT, with Proxy-Authorization when the route has credentials. The
// parent's answer is read byte by byte up to the end of its head, so that
// nothing of the origin's stream stays in a buffer here.
func (u *Client) connectParent(ctx context.Context, rt *route, hostport string) (net.Conn, error) {
	c, err := u.dialRoute(ctx, rt)
	if err != nil {
		return nil, err
	}
	lift := handshakeDeadline(ctx, c)
	err = writeConnect(c, rt, hostport)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(bufio.NewReaderSize(oneByte{c}, 16), &http.Request{Method: http.MethodConnect})
	}
	lift()
	switch {
	case err != nil:
		c.Close()
		if cut := cutShort(ctx, "CONNECT to "+hostport+" through "+rt.name()); cut != nil {
			return nil, cut
		}
		return nil, rt.fail(dialReason(err), fmt.Errorf("CONNECT to %s: %w", hostport, err))
	case resp.StatusCode/100 != 2:
		c.Close()
		reason := "rejected"
		// Some parents (tinyproxy) answer wrong credentials with 401.
		if resp.StatusCode == http.StatusProxyAuthRequired || resp.StatusCode == http.StatusUnauthorized {
			reason = "auth"
		}
		return nil, rt.fail(reason, fmt.Errorf("refused CONNECT to %s: %s", hostport, resp.Status))
	}
	return c, nil
}

func writeConnect(c net.Conn, rt *route, hostport string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", hostport, hostport)
	if rt.proxyAuth != "" {
		b.WriteString("Proxy-Authorization: " + rt.proxyAuth + "\r\n")
	}
	b.WriteString("\r\n")
	_, err := c.Write(b.Bytes())
	return err
}

// oneByte reads at most one byte at a time, so a bufio.Reader over it
// never reads past the CONNECT answer's head (a 2xx answer has no body).
type oneByte struct{ c net.Conn }

func (r oneByte) Read(p []byte) (int, error) { return r.c.Read(p[:min(len(p), 1)]) }

// absoluteHead turns an origin-form request head into the one a parent
// proxy takes: the request target in absolute form (origin is
// "http://host:port") and the parent's Proxy-Authorization. Only the
// socket gets it; the request record keeps the origin-form head.
func absoluteHead(head []byte, origin, proxyAuth string) []byte {
	sp := bytes.IndexByte(head, ' ')
	eol := bytes.Index(head, []byte("\r\n"))
	if sp < 0 || eol < sp {
		return head
	}
	b := make([]byte, 0, len(head)+len(origin)+len(proxyAuth)+32)
	b = append(b, head[:sp+1]...)
	b = append(b, origin...)
	line := head[sp+1 : eol+2]               // request target, version, CRLF
	if bytes.HasPrefix(line, []byte("* ")) { // OPTIONS *
		line = line[1:]
	}
	b = append(b, line...)
	if proxyAuth != "" {
		b = appendField(b, "Proxy-Authorization", proxyAuth)
	}
	return append(b, head[eol+2:]...)
}

// parentRefused reports whether resp, the answer to a plain request sent
// through the parent, is the parent refusing the request rather than the
// origin's answer. Only a proxy asks for proxy credentials (407). Some
// parents (tinyproxy) answer wrong credentials with a 401 and
// WWW-Authenticate, as an origin that wants a login does: then a CONNECT
// to the same origin with the same credentials tells, since only the
// parent would refuse that for its credentials. Any other answer to it
// (200, or a 403 for a port the parent does not CONNECT to) shows the
// credentials taken, and the parent is believed for credsTrusted, so that a
// site full of 401s costs no CONNECT each. ctx (nil: none) bounds the
// CONNECT, as the socket timeout does.
func (u *Client) parentRefused(ctx context.Context, c *Conn, resp *http.Response) bool {
	rt := c.fwdRoute
	switch {
	case resp.StatusCode == http.StatusProxyAuthRequired:
		return true
	case resp.StatusCode != http.StatusUnauthorized || rt.proxyAuth == "":
		return false
	case time.Since(time.Unix(0, rt.credsAccepted.Load())) < credsTrusted:
		return false
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if u.socketTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, u.socketTimeout)
		defer cancel()
	}
	probe, err := u.connectParent(ctx, rt, strings.TrimPrefix(c.fwdOrigin, "http://"))
	var re *RouteError
	switch {
	case err == nil:
		probe.Close()
	case errors.As(err, &re) && re.Reason == "auth":
		return true
	case errors.As(err, &re) && re.Reason == "rejected":
		// The parent answered, and not about credentials.
	default:
		return false // no answer: nothing learnt
	}
	rt.credsAccepted.Store(time.Now().UnixNano())
	return false
}

// credsTrusted is how long a parent that took the credentials for a
// CONNECT is believed to take them.
const credsTrusted = time.Minute
