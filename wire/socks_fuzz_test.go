package wire

import (
	"bytes"
	"testing"
)

// FuzzSOCKSHandshake feeds arbitrary bytes as a SOCKS5 server's side of
// the handshake (choice of method, RFC 1929 answer when asked for, reply
// to CONNECT). It must never panic or hang (the connection ends with the
// input), and a handshake it accepts has read exactly the server's answers,
// no byte further: the rest of the input is the origin's, which the caller
// reads next.
func FuzzSOCKSHandshake(f *testing.F) {
	connected := []byte{5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38}
	for _, seed := range []struct {
		login  bool
		server []byte
	}{
		{false, append([]byte{5, 0}, connected...)},
		{false, append(append([]byte{5, 0}, connected...), "HTTP/1.1 200 OK\r\n"...)},
		{false, []byte{5, 0, 5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x04, 0x38}},
		{false, append(append([]byte{5, 0, 5, 0, 0, 3, 9}, "localhost"...), 0x04, 0x38)},
		{false, []byte{5, 0, 5, 0, 0, 3, 255}},
		{false, []byte{5, 0, 5, 0, 0, 9}},
		{false, []byte{5, 0, 5, 4, 0, 1, 0, 0, 0, 0, 0, 0}},
		{false, []byte{5, 0, 5, 9, 0, 1, 0, 0, 0, 0, 0, 0}},
		{false, []byte{5, 0xff}},
		{false, []byte{4, 0}},
		{true, append([]byte{5, 2, 1, 0}, connected...)},
		{true, append([]byte{5, 2, 1, 1}, connected...)},
		{true, append([]byte{5, 2, 5, 0}, connected...)},
		{true, []byte{5, 2, 1}},
		{true, nil},
	} {
		f.Add(seed.login, seed.server)
	}
	req, err := socksConnectRequest("example.com:80")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, login bool, server []byte) {
		rt := &route{kind: RouteSOCKS, addr: "127.0.0.1:1080"}
		if login {
			rt.user, rt.password = "u", "pw"
		}
		r := bytes.NewReader(server)
		if err := rt.socksHandshake(&scriptedConn{r: r}, req, "example.com:80"); err != nil {
			return
		}
		read := len(server) - r.Len()
		want, refusal := socksAnswers(server, login)
		if refusal != "" {
			t.Fatalf("handshake accepted although %s", refusal)
		}
		if read != want {
			t.Fatalf("handshake read %d bytes of the server's %d; its answers are %d", read, len(server), want)
		}
	})
}

// socksAnswers is the length of an accepted handshake's server side: the
// choice of method, the RFC 1929 answer if it chose username/password, and
// the reply to CONNECT with its bound address; or what in them says no.
// It assumes the bytes are there, and so fails the fuzz target with an
// index out of range when a handshake was accepted without them.
func socksAnswers(server []byte, login bool) (n int, refusal string) {
	switch {
	case server[0] != 5:
		return 0, "the server is not SOCKS5"
	case server[1] == socksUserPassword && login:
		if server[2] != userPassVersion || server[3] != 0 {
			return 0, "the login was not accepted"
		}
		n = 4
	case server[1] == socksNoAuth:
		n = 2
	default:
		return 0, "no acceptable method was chosen"
	}
	reply := server[n:]
	if reply[0] != 5 || reply[1] != 0 {
		return 0, "the CONNECT reply is not a success"
	}
	switch reply[3] {
	case 1:
		return n + 4 + 4 + 2, ""
	case 4:
		return n + 4 + 16 + 2, ""
	case 3:
		return n + 4 + 1 + int(reply[4]) + 2, ""
	}
	return 0, "the bound address has an unknown type"
}
