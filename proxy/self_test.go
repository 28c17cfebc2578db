package proxy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/wire"
)

func selfServer(t *testing.T, listen string, logs *bytes.Buffer) *Server {
	t.Helper()
	ap := netip.MustParseAddrPort(listen)
	s := &Server{logger: slog.New(slog.NewTextHandler(logs, nil))}
	s.addr.Store(net.TCPAddrFromAddrPort(ap))
	return s
}

// The proxy's own socket is recognised under every address that reaches
// it, and only those: the same port on another host, or another port
// here, is somebody else's server.
func TestIsSelfAddr(t *testing.T) {
	var logs bytes.Buffer
	all := selfServer(t, "0.0.0.0:8000", &logs)
	lo := selfServer(t, "127.0.0.1:8000", &logs)
	local := "127.0.0.1"
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				local = n.IP.String()
				break
			}
		}
	}
	for _, c := range []struct {
		s      *Server
		target string
		want   bool
	}{
		{all, "127.0.0.1:8000", true},
		{all, "127.0.0.2:8000", true},
		{all, "[::1]:8000", true},
		{all, "0.0.0.0:8000", true},
		{all, "[::ffff:127.0.0.1]:8000", true},
		{all, net.JoinHostPort(local, "8000"), true},
		{all, "192.0.2.7:8000", false}, // TEST-NET-1: never a local address
		{all, "127.0.0.1:8001", false},
		{lo, "127.0.0.1:8000", true},
		{lo, "0.0.0.0:8000", true},
		{lo, "127.0.0.2:8000", false}, // bound to 127.0.0.1 only
		{lo, net.JoinHostPort(local, "8000"), local == "127.0.0.1"},
	} {
		got, err := c.s.isSelfAddr(netip.MustParseAddrPort(c.target))
		require.NoError(t, err)
		require.Equal(t, c.want, got, "listening on %v, target %s", c.s.addr.Load(), c.target)
	}
	require.Empty(t, logs.String())
}

// A name that resolves to the proxy is caught where the address is known,
// in the dialer, whatever the name; another listener on the same host is
// dialed normally.
func TestDialerRefusesSelf(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	other, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer other.Close()

	var logs bytes.Buffer
	s := selfServer(t, ln.Addr().String(), &logs)
	u := wire.NewClient(wire.Options{SocketTimeout: time.Second, Vet: s.selfTarget})
	ctx := context.Background()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, target := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		_, err := u.DialTCP(ctx, target)
		require.ErrorIs(t, err, errSelfTarget, target)
		code, _, _ := classifyUpstreamError(err)
		require.Equal(t, 403, code, target)
	}
	c, err := u.DialTCP(ctx, other.Addr().String())
	require.NoError(t, err)
	c.Close()
}

// Without the host's address list (a sandbox that forbids netlink), a
// request to an unknown address on the proxy's port is refused with the
// reason, and the log says so once, naming the fix.
func TestSelfCheckFailsClosed(t *testing.T) {
	saved := interfaceAddrs
	interfaceAddrs = func() ([]net.Addr, error) { return nil, errors.New("address family not supported by protocol") }
	defer func() { interfaceAddrs = saved }()

	var logs bytes.Buffer
	s := selfServer(t, "0.0.0.0:8000", &logs)
	for range 3 {
		err := s.selfTarget("192.0.2.7:8000")
		require.ErrorIs(t, err, errSelfTarget)
		require.Contains(t, err.Error(), "cannot tell whether 192.0.2.7:8000 is this proxy")
	}
	require.NoError(t, s.selfTarget("192.0.2.7:8001"), "another port is never the proxy")
	require.NoError(t, s.selfTarget("127.0.0.1:8001"))
	require.ErrorIs(t, s.selfTarget("127.0.0.1:8000"), errSelfTarget, "loopback needs no list")
	require.Equal(t, 1, strings.Count(logs.String(), "cannot list this host's addresses"), logs.String())
	require.Contains(t, logs.String(), "AF_NETLINK")
}

// An IPv6 address with a zone (RFC 6874 "[::1%25lo]" in a URL) reaches the
// same socket as the address without it, so the zone must not hide the
// proxy from the check: dialed for real, each of these would loop.
func TestDialerRefusesSelfWithZone(t *testing.T) {
	type dial struct{ listen, target string }
	var dials []dial
	if ifc, err := net.InterfaceByIndex(1); err == nil {
		dials = append(dials, dial{"[::1]:0", "::1%" + ifc.Name})
	}
	// A link-local address of this host, under the zone of its interface,
	// while the proxy listens on every address.
	ifcs, _ := net.Interfaces()
	for _, ifc := range ifcs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() == nil && n.IP.IsLinkLocalUnicast() && ifc.Flags&net.FlagUp != 0 {
				dials = append(dials, dial{"[::]:0", n.IP.String() + "%" + ifc.Name})
			}
		}
	}
	tried := 0
	for _, d := range dials {
		ln, err := net.Listen("tcp6", d.listen)
		if err != nil {
			continue // no IPv6 here
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		target := net.JoinHostPort(d.target, port)
		// Only addresses the kernel connects to prove anything.
		c, err := net.DialTimeout("tcp", target, time.Second)
		if err != nil {
			continue
		}
		c.Close()
		tried++

		var logs bytes.Buffer
		s := selfServer(t, ln.Addr().String(), &logs)
		u := wire.NewClient(wire.Options{SocketTimeout: time.Second, Vet: s.selfTarget})
		_, err = u.DialTCP(context.Background(), target)
		require.ErrorIs(t, err, errSelfTarget, "listening on %s, dialing %s", ln.Addr(), target)
		require.True(t, s.isSelf(target), "isSelf(%s), listening on %s", target, ln.Addr())
	}
	if tried == 0 {
		t.Skip("no zoned IPv6 address reaches a local socket here")
	}
}
