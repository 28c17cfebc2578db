package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// isSelf reports whether hostport, as the client wrote it, names this
// proxy's own listening socket. Names other than localhost are not
// resolved here: the dialer checks the address they resolve to
// (selfTarget), so a name that points back at the proxy is refused there.
func (s *Server) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	// Another port is never the proxy: most requests stop here, before
	// anything allocates. "08000" is port 8000 too.
	addr := s.addr.Load()
	if n, err := strconv.Atoi(port); err != nil || addr == nil || n != addr.Port {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return addr.IP.IsLoopback() || addr.IP.IsUnspecified()
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	self, _ := s.isSelfAddr(netip.AddrPortFrom(ip, uint16(addr.Port)))
	return self
}

// interfaceAddrs lists the host's addresses (a variable for tests).
var interfaceAddrs = net.InterfaceAddrs

// errSelfTarget is a dial to the proxy's own listening socket.
var errSelfTarget = errors.New("refusing to connect to the proxy itself")

// selfTarget is the dialer's check on the address a target resolved to:
// connecting to the proxy's own socket would record the proxy answering
// itself (or loop). It fails closed when the host's addresses cannot be
// listed, saying why.
func (s *Server) selfTarget(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil
	}
	self, err := s.isSelfAddr(ap)
	switch {
	case err != nil:
		return fmt.Errorf("%w: cannot tell whether %s is this proxy: %v", errSelfTarget, ap, err)
	case self:
		return fmt.Errorf("%w (%s)", errSelfTarget, ap)
	}
	return nil
}

// isSelfAddr reports whether ap is an address of this proxy's listening
// socket. When the proxy listens on every interface, that takes the
// host's address list; an error says it could not be read (for example
// under a sandbox that forbids netlink sockets), and is logged once.
func (s *Server) isSelfAddr(ap netip.AddrPort) (bool, error) {
	addr := s.addr.Load()
	if addr == nil || int(ap.Port()) != addr.Port {
		return false, nil
	}
	// A zone ("[::1%lo]", "[fe80::1%eth0]") names the interface, not
	// another address: the same socket answers with or without it.
	ip := ap.Addr().Unmap().WithZone("")
	listen, _ := netip.AddrFromSlice(addr.IP)
	listen = listen.Unmap()
	// Connecting to 0.0.0.0 or :: reaches this host's own listeners.
	if ip == listen || ip.IsUnspecified() {
		return true, nil
	}
	if !listen.IsUnspecified() {
		return false, nil
	}
	if ip.IsLoopback() {
		return true, nil
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		err = fmt.Errorf("listing this host's addresses: %w", err)
		s.selfCheckWarn.Do(func() {
			s.logger.Error("cannot list this host's addresses: requests to this host's own addresses on the proxy's port are refused, since they may loop back to the proxy (under systemd, RestrictAddressFamilies needs AF_NETLINK)", "err", err)
		})
		return false, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if local, ok := netip.AddrFromSlice(n.IP); ok && local.Unmap() == ip {
				return true, nil
			}
		}
	}
	return false, nil
}
