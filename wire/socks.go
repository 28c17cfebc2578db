package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// dialSOCKS asks the route's SOCKS5 server (RFC 1928) to connect to
// hostport, sending the host name unresolved (remote DNS: names only the
// SOCKS side can resolve, .onion ones among them, still work). The
// connection to the SOCKS server is the tunnel once the handshake is done.
// The handshake is read without a buffer, so nothing of the origin's
// stream is held back here.
func (u *Client) dialSOCKS(ctx context.Context, rt *route, hostport string) (net.Conn, error) {
	req, err := socksConnectRequest(hostport)
	if err != nil {
		return nil, err
	}
	c, err := u.dialRoute(ctx, rt)
	if err != nil {
		return nil, err
	}
	lift := handshakeDeadline(ctx, c)
	err = rt.socksHandshake(c, req, hostport)
	lift()
	if err != nil {
		c.Close()
		if cut := cutShort(ctx, "SOCKS handshake with "+rt.name()+" for CONNECT to "+hostport); cut != nil {
			return nil, cut
		}
		return nil, err
	}
	return c, nil
}

// socksHandshake authenticates to the SOCKS server, sends the CONNECT
// request req and reads the server's reply.
func (rt *route) socksHandshake(c net.Conn, req []byte, hostport string) error {
	if err := rt.socksAuthenticate(c); err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return rt.fail(dialReason(err), fmt.Errorf("sending CONNECT to %s: %w", hostport, err))
	}
	return rt.socksReply(c, hostport)
}

// SOCKS5 authentication methods (RFC 1928) and the username/password
// sub-negotiation's version (RFC 1929).
const (
	socksNoAuth       = 0x00
	socksUserPassword = 0x02
	socksNoAcceptable = 0xff
	userPassVersion   = 0x01
)

// socksAuthenticate offers "no authentication", and username/password
// when the route has credentials, and goes through the method the server
// picks.
func (rt *route) socksAuthenticate(c net.Conn) error {
	greeting := []byte{5, 1, socksNoAuth}
	if rt.hasSOCKSCredentials() {
		greeting = []byte{5, 2, socksNoAuth, socksUserPassword}
	}
	var b [2]byte
	if err := exchange(c, greeting, b[:]); err != nil {
		return rt.handshakeFailed("greeting", err)
	}
	switch {
	case b[0] != 5:
		return rt.fail("other", fmt.Errorf("not a SOCKS5 server: answered version %d", b[0]))
	case b[1] == socksNoAuth:
		return nil
	case b[1] == socksUserPassword && rt.hasSOCKSCredentials():
		return rt.socksLogin(c)
	case b[1] == socksNoAcceptable && !rt.hasSOCKSCredentials():
		return rt.fail("auth", errors.New("authentication required: no username/password configured"))
	}
	return rt.fail("auth", fmt.Errorf("no acceptable authentication method (server chose %#x)", b[1]))
}

func (rt *route) hasSOCKSCredentials() bool { return rt.user != "" || rt.password != "" }

// socksLogin is RFC 1929's username/password sub-negotiation. Errors never
// carry the credentials.
func (rt *route) socksLogin(c net.Conn) error {
	// RFC 1929 gives each a one-byte length. internal/config already
	// refuses credentials outside these limits, but this package is also
	// used without it (in tests, for one): a longer one would go out with
	// its length cut to one byte, a message the server misreads, rather
	// than as this error.
	if len(rt.user) == 0 || len(rt.user) > 255 || len(rt.password) > 255 {
		return rt.fail("auth", errors.New("username must be 1 to 255 bytes, password at most 255 (RFC 1929)"))
	}
	msg := make([]byte, 0, 3+len(rt.user)+len(rt.password))
	msg = append(msg, userPassVersion, byte(len(rt.user)))
	msg = append(msg, rt.user...)
	msg = append(msg, byte(len(rt.password)))
	msg = append(msg, rt.password...)
	var b [2]byte
	if err := exchange(c, msg, b[:]); err != nil {
		return rt.handshakeFailed("authentication", err)
	}
	switch {
	case b[0] != userPassVersion:
		return rt.fail("other", fmt.Errorf("not a SOCKS5 username/password answer: version %d", b[0]))
	case b[1] != 0:
		return rt.fail("auth", errors.New("username/password authentication failed"))
	}
	return nil
}

// socksConnectRequest is the CONNECT request for hostport: IP literals as
// addresses, names as names (the SOCKS side resolves them).
func socksConnectRequest(hostport string) ([]byte, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port in %s", hostport)
	}
	req := []byte{5, 1, 0} // version, CONNECT, reserved
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.Is4() {
			req = append(req, 1)
		} else {
			req = append(req, 4)
		}
		req = append(req, ip.AsSlice()...)
	} else {
		if len(host) > 255 {
			return nil, fmt.Errorf("host name of %d bytes is too long for SOCKS5", len(host))
		}
		req = append(req, 3, byte(len(host)))
		req = append(req, host...)
	}
	return binary.BigEndian.AppendUint16(req, uint16(n)), nil
}

// socksReply reads the server's reply to CONNECT. A failure the reply
// code puts on the target (and a timeout waiting for the reply, which
// comes once the server's own connection to the target is up) is the
// origin's, as it would be on a direct dial; any other failure is the
// route's.
func (rt *route) socksReply(c net.Conn, hostport string) error {
	var b [4]byte // version, reply, reserved, address type
	if _, err := io.ReadFull(c, b[:]); err != nil {
		if dialReason(err) == "timeout" {
			return rt.targetFailed(hostport, syscall.ETIMEDOUT, "no answer from "+rt.name()+" to CONNECT in time")
		}
		return rt.handshakeFailed("CONNECT", err)
	}
	if b[0] != 5 {
		return rt.fail("other", fmt.Errorf("not a SOCKS5 server: answered version %d", b[0]))
	}
	if b[1] != 0 {
		if errno, ok := socksTargetReplies[b[1]]; ok {
			return rt.targetFailed(hostport, errno, socksReplyText(b[1])+" (reported by "+rt.name()+")")
		}
		return rt.fail("rejected", fmt.Errorf("refused CONNECT to %s: %s", hostport, socksReplyText(b[1])))
	}
	// The bound address, which nothing here needs, but whose bytes come
	// before the origin's.
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return rt.handshakeFailed("CONNECT", err)
	}
	rest, ok := socksAddrRest(b[3], first[0])
	if !ok {
		return rt.fail("other", fmt.Errorf("unknown address type %d in the reply to CONNECT", b[3]))
	}
	if _, err := io.ReadFull(c, make([]byte, rest)); err != nil {
		return rt.handshakeFailed("CONNECT", err)
	}
	return nil
}

// socksAddrRest is how many bytes of a SOCKS5 address and its port follow
// the address's first byte (RFC 1928: of a name, that byte is its length),
// for address type atyp; false for an unknown type.
func socksAddrRest(atyp, first byte) (int, bool) {
	switch atyp {
	case 1: // IPv4
		return 3 + 2, true
	case 4: // IPv6
		return 15 + 2, true
	case 3: // a name
		return int(first) + 2, true
	}
	return 0, false
}

// exchange writes msg and reads the answer into ans.
func exchange(c net.Conn, msg, ans []byte) error {
	if _, err := c.Write(msg); err != nil {
		return err
	}
	_, err := io.ReadFull(c, ans)
	return err
}

// handshakeFailed is the route error for a handshake step that could not
// be written or read.
func (rt *route) handshakeFailed(step string, err error) *RouteError {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return rt.fail("other", fmt.Errorf("closed the connection during the SOCKS %s", step))
	}
	return rt.fail(dialReason(err), fmt.Errorf("SOCKS %s: %w", step, err))
}

// socksTargetReplies are the SOCKS5 reply codes that put the failure on
// the target rather than on the SOCKS server (RFC 1928 section 6), with
// the error a direct dial gets for the same thing. 0x01 (general failure,
// which microsocks also answers for a name it cannot resolve), 0x02 (not
// allowed by the ruleset), 0x07 and 0x08 (unsupported) are the server's.
var socksTargetReplies = map[byte]syscall.Errno{
	0x03: syscall.ENETUNREACH,
	0x04: syscall.EHOSTUNREACH, // Tor's answer for a name it cannot resolve too
	0x05: syscall.ECONNREFUSED,
	0x06: syscall.ETIMEDOUT,
}

func socksReplyText(code byte) string {
	switch code {
	case 0x01:
		return "general SOCKS server failure"
	case 0x02:
		return "connection not allowed by ruleset"
	case 0x03:
		return "network unreachable"
	case 0x04:
		return "host unreachable"
	case 0x05:
		return "connection refused"
	case 0x06:
		return "TTL expired (timed out)"
	case 0x07:
		return "command not supported"
	case 0x08:
		return "address type not supported"
	}
	return "unknown reply " + strconv.Itoa(int(code))
}

// targetFailed is the error for a target the SOCKS server could not
// reach. It has the shape of a failed direct dial, a *net.OpError "dial"
// around the errno, so that the client's answer, the metrics and the
// crawl log treat it as one; its text says which server reported it.
func (rt *route) targetFailed(hostport string, errno syscall.Errno, msg string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: targetAddr(hostport), Err: &socksTargetError{errno, msg}}
}

// socksTargetError is the origin's failure as the SOCKS server saw it.
type socksTargetError struct {
	errno syscall.Errno // what a direct dial would have failed with
	msg   string
}

func (e *socksTargetError) Error() string { return e.msg }
func (e *socksTargetError) Unwrap() error { return e.errno }

// Timeout makes a target that did not answer in time a timeout, as on a
// direct dial (504).
func (e *socksTargetError) Timeout() bool { return e.errno == syscall.ETIMEDOUT }

// targetAddr is a target host:port as a net.Addr (its host may be a name).
type targetAddr string

func (a targetAddr) Network() string { return "tcp" }
func (a targetAddr) String() string  { return string(a) }
