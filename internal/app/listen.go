package app

import "net/netip"

// listenNetwork is "tcp4" for an IPv4 address: Go's "tcp" on 0.0.0.0 opens
// a dual-stack socket, which would also accept IPv6 clients an operator
// who wrote 0.0.0.0 (and firewalled IPv4) did not mean to serve. "::" and
// names keep "tcp".
func listenNetwork(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		return "tcp4"
	}
	return "tcp"
}
