package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrPrivateTarget is a dial refused by --deny-private-targets.
var ErrPrivateTarget = errors.New("target address is loopback, private or link-local (--deny-private-targets)")

// checkTarget refuses loopback, private (RFC 1918, RFC 4193), link-local,
// unspecified and CGNAT (RFC 6598) addresses.
func checkTarget(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || cgnat.Contains(ip) {
		return fmt.Errorf("%s: %w", ip, ErrPrivateTarget)
	}
	return nil
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// checkRouted is the target check when a route dials for the proxy: the
// address dialed is the route's, so the target is checked before. An IP
// literal is checked as it is; with --deny-private-targets a name is
// resolved here and refused if any address it has is refused, and passed
// to the route when it does not resolve here (the route resolves it: a
// name only the route's side knows). .onion names are never looked up
// locally (that would leak them to the local resolver).
func (u *Client) checkRouted(ctx context.Context, rt *route, hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return u.vetTarget(net.JoinHostPort(ip.String(), port))
	}
	if !u.denyPrivate || rt.kind == RouteTor || isOnion(hostport) {
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil // not resolvable here: the route's business
	}
	for _, ip := range ips {
		if err := u.vetTarget(net.JoinHostPort(ip.String(), port)); err != nil {
			return err
		}
	}
	return nil
}

// vetTarget applies the proxy's own check (not itself) and, with
// --deny-private-targets, the private-address check to one target address
// (ip:port): on the address dialed directly, or before a route dials.
func (u *Client) vetTarget(address string) error {
	if u.vet != nil {
		if err := u.vet(address); err != nil {
			return err
		}
	}
	if u.denyPrivate {
		return checkTarget(address)
	}
	return nil
}
