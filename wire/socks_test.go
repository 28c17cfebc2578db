package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// socksStub is a SOCKS5 server (no authentication) that answers one
// CONNECT with reply and then sends after, handing over the CONNECT
// request it read.
func socksStub(t *testing.T, reply []byte, after string) (addr string, got <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	ch := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		greeting := make([]byte, 3)
		if _, err := io.ReadFull(c, greeting); err != nil {
			return
		}
		_, _ = c.Write([]byte{5, 0})
		req, err := readSOCKSRequest(c)
		if err != nil {
			return
		}
		ch <- req
		_, _ = c.Write(append(append([]byte(nil), reply...), after...))
		_, _ = io.Copy(io.Discard, c)
	}()
	return ln.Addr().String(), ch
}

// readSOCKSRequest reads one CONNECT request, whose length its address
// type gives, whatever the reads it arrives in.
func readSOCKSRequest(r io.Reader) ([]byte, error) {
	req := make([]byte, 5) // version, command, reserved, address type, first address byte
	if _, err := io.ReadFull(r, req); err != nil {
		return nil, err
	}
	rest, ok := socksAddrRest(req[3], req[4])
	if !ok {
		return nil, fmt.Errorf("address type %d", req[3])
	}
	req = append(req, make([]byte, rest)...)
	_, err := io.ReadFull(r, req[5:])
	return req, err
}

// TestSOCKSConnectRequest: IP literals go as addresses, names unresolved.
func TestSOCKSConnectRequest(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   []byte
	}{
		{"192.0.2.1:80", []byte{5, 1, 0, 1, 192, 0, 2, 1, 0, 80}},
		{"[2001:db8::1]:443", []byte{5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 187}},
		{"example.onion:8080", append(append([]byte{5, 1, 0, 3, 13}, "example.onion"...), 0x1f, 0x90)},
	} {
		addr, got := socksStub(t, []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}, "")
		u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: Route{SOCKS: addr}})
		c, err := u.DialTCP(context.Background(), tc.target)
		require.NoError(t, err, tc.target)
		c.Close()
		require.Equal(t, tc.want, <-got, tc.target)
	}
}

// TestSOCKSReplyBoundAddress: the reply's bound address, of whichever
// type, is read whole and no further: the origin's first bytes are the
// tunnel's first bytes.
func TestSOCKSReplyBoundAddress(t *testing.T) {
	for name, reply := range map[string][]byte{
		"ipv4": {5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38},
		"ipv6": {5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x04, 0x38},
		"name": append(append([]byte{5, 0, 0, 3, 9}, "localhost"...), 0x04, 0x38),
	} {
		t.Run(name, func(t *testing.T) {
			addr, _ := socksStub(t, reply, "HTTP/1.1 200 OK\r\n")
			u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: Route{SOCKS: addr}})
			c, err := u.DialTCP(context.Background(), "example.com:80")
			require.NoError(t, err)
			defer c.Close()
			got := make([]byte, len("HTTP/1.1 200 OK\r\n"))
			_, err = io.ReadFull(c, got)
			require.NoError(t, err)
			require.Equal(t, "HTTP/1.1 200 OK\r\n", string(got))
		})
	}
}

// TestSOCKSReplyCodes: the replies RFC 1928 puts on the target fail like
// a direct dial (a *net.OpError around the errno, a timeout for TTL
// expired) and name the SOCKS server; the others are the route's.
func TestSOCKSReplyCodes(t *testing.T) {
	for _, tc := range []struct {
		code   byte
		errno  syscall.Errno // 0: a route error
		reason string        // the route error's reason
	}{
		{0x01, 0, "rejected"},
		{0x02, 0, "rejected"},
		{0x03, syscall.ENETUNREACH, ""},
		{0x04, syscall.EHOSTUNREACH, ""},
		{0x05, syscall.ECONNREFUSED, ""},
		{0x06, syscall.ETIMEDOUT, ""},
		{0x07, 0, "rejected"},
		{0x08, 0, "rejected"},
		{0x09, 0, "rejected"},
	} {
		addr, _ := socksStub(t, []byte{5, tc.code, 0, 1, 0, 0, 0, 0, 0, 0}, "")
		u := NewClient(Options{SocketTimeout: 5 * time.Second, Route: Route{SOCKS: addr}})
		_, err := u.DialTCP(context.Background(), "192.0.2.1:80")
		require.Error(t, err)
		var re *RouteError
		if tc.errno == 0 {
			require.ErrorAs(t, err, &re, "reply %#x", tc.code)
			require.Equal(t, tc.reason, re.Reason)
			continue
		}
		require.False(t, errors.As(err, &re), "reply %#x is not the route's: %v", tc.code, err)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "dial", oe.Op)
		require.ErrorIs(t, err, tc.errno)
		require.Equal(t, tc.errno == syscall.ETIMEDOUT, oe.Timeout(), "reply %#x", tc.code)
		require.Contains(t, err.Error(), "192.0.2.1:80: ")
		require.Contains(t, err.Error(), "(reported by socks proxy "+addr+")")
	}
}

// TestSOCKSLogin: the RFC 1929 answer is taken only from a server that
// speaks it (version 1) and says yes (status 0).
func TestSOCKSLogin(t *testing.T) {
	connected := []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0} // the reply to CONNECT
	for _, tc := range []struct {
		name   string
		server []byte // the choice of method, the RFC 1929 answer and on
		reason string // "": success; else the route error's reason
	}{
		{"accepted", append([]byte{5, 2, 1, 0}, connected...), ""},
		{"refused", append([]byte{5, 2, 1, 1}, connected...), "auth"},
		{"wrong version", append([]byte{5, 2, 5, 0}, connected...), "other"},
		{"closed", []byte{5, 2, 1}, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &route{kind: RouteSOCKS, addr: "127.0.0.1:1080", user: "u", password: "s3cret-pw"}
			err := rt.socksHandshake(&scriptedConn{r: bytes.NewReader(tc.server)}, []byte{5, 1, 0, 1, 192, 0, 2, 1, 0, 80}, "192.0.2.1:80")
			if tc.reason == "" {
				require.NoError(t, err)
				return
			}
			var re *RouteError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.reason, re.Reason, err.Error())
			require.NotContains(t, err.Error(), "s3cret-pw")
		})
	}
}
