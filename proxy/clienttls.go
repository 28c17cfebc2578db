package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/warcproxy/warcproxy/mitm"
)

// clientTLSConfig is the server side of the TLS handshakes with clients in
// CONNECT tunnels. It offers h2 (with --http2), http/1.1 and http/1.0 by
// ALPN, and never fails a handshake over ALPN: a client whose offers
// overlap none of those (Go's server would answer no_application_protocol)
// gets a handshake without ALPN and speaks HTTP/1.x.
func (s *Server) clientTLSConfig() *tls.Config {
	protos := []string{"http/1.1", "http/1.0"}
	if s.opts.HTTP2 {
		protos = append([]string{"h2"}, protos...)
	}
	withALPN := &tls.Config{NextProtos: protos, GetCertificate: s.leafFor}
	noALPN := &tls.Config{GetCertificate: s.leafFor}
	return &tls.Config{
		GetCertificate: s.leafFor,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			for _, p := range hello.SupportedProtos {
				if slices.Contains(protos, p) {
					return withALPN, nil
				}
			}
			return noALPN, nil
		},
	}
}

// leafFor picks the certificate for a client's TLS handshake in a tunnel:
// the name the client asked for (SNI), else the CONNECT host.
func (s *Server) leafFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	tc, _ := hello.Conn.(*tunnelConn)
	if !mitm.ValidHostName(name) {
		name = ""
	}
	if tc != nil {
		// Runs in the goroutine that then serves the tunnel.
		tc.tun.sni = name
		if name == "" {
			name = tc.tun.host
		}
	}
	return s.opts.CA.Leaf(name)
}

// withTunnel puts the tunnel a connection of the inner server belongs to
// into its context: an HTTP/1.x one comes as a servedConn, an HTTP/2 one
// as the bare *tls.Conn (net/http serves h2 only on a *tls.Conn).
func withTunnel(ctx context.Context, c net.Conn) context.Context {
	var tun *tunnel
	switch c := c.(type) {
	case *servedConn:
		tun = c.tun
	case *tls.Conn:
		if tc, ok := c.NetConn().(*tunnelConn); ok {
			tun = tc.tun
		}
	}
	if tun == nil {
		return ctx
	}
	return context.WithValue(ctx, tunnelKey{}, tun)
}

// negotiatedH2 reports whether r came on an HTTP/2 connection the client
// asked for by ALPN in a tunnel (rather than an HTTP/2 preface sent to an
// HTTP/1.1 server).
func negotiatedH2(r *http.Request) bool {
	return r.ProtoMajor == 2 && r.Method != "PRI" && r.TLS != nil && r.TLS.NegotiatedProtocol == "h2"
}
