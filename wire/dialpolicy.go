package wire

import (
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
