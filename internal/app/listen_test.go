package app

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// --address 0.0.0.0 means IPv4 only: an IPv6 client (here over ::1) is
// not served, as an operator who firewalled IPv4 expects. "::" serves
// both. Only loopback addresses are dialed.
func TestListenNetworkFollowsTheAddressFamily(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skip("no IPv6 loopback here:", err)
	} else {
		ln.Close()
	}
	for _, c := range []struct {
		host   string
		v4, v6 bool
	}{
		{"0.0.0.0", true, false},
		{"::", true, true},
	} {
		ln, err := net.Listen(listenNetwork(c.host), net.JoinHostPort(c.host, "0"))
		require.NoError(t, err)
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				conn.Close()
			}
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		for _, d := range []struct {
			addr string
			want bool
		}{{"127.0.0.1", c.v4}, {"::1", c.v6}} {
			conn, err := net.Dial("tcp", net.JoinHostPort(d.addr, port))
			if conn != nil {
				conn.Close()
			}
			require.Equal(t, d.want, err == nil, "listening on %s, dialing %s: %v", c.host, d.addr, err)
		}
		ln.Close()
	}
	require.Equal(t, "tcp", listenNetwork("localhost"))
	require.Equal(t, "tcp", listenNetwork(""))
}
