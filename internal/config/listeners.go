package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// listener is one socket the process listens on: the flags that set it,
// as an operator reads them in a message, and the host and port.
type listener struct {
	flags string // "--address 127.0.0.1 --port 8000", "--metrics-address 127.0.0.1:9100"
	host  string
	port  int // 0 picks a free port
}

// listeners are the sockets the configuration asks for. A new listening
// port (a job's, say) is added here, and checkListeners compares it with
// the others.
func (c Config) listeners() []listener {
	ls := []listener{{flags: fmt.Sprintf("--address %s --port %d", shownHost(c.Address), c.Port), host: c.Address, port: c.Port}}
	if c.MetricsAddress != "" {
		if host, port, ok := splitListenAddress(c.MetricsAddress); ok {
			ls = append(ls, listener{flags: "--metrics-address " + c.MetricsAddress, host: host, port: port})
		}
	}
	return ls
}

// shownHost is the host as a flag value an operator could type.
func shownHost(h string) string {
	if h == "" {
		return `""`
	}
	return h
}

// splitListenAddress is host:port's host and port number, a service name
// looked up as net.Listen would; ok is false for what Validate reports.
func splitListenAddress(addr string) (host string, port int, ok bool) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil || p == "" {
		return "", 0, false
	}
	if port, err = strconv.Atoi(p); err != nil {
		if port, err = net.LookupPort("tcp", p); err != nil {
			return "", 0, false
		}
	}
	return host, port, port >= 0 && port <= 65535
}

// checkListeners reports each pair of listeners that would take the same
// socket, so that the second would fail with "address already in use" as
// if another process held it. Two clash on the same port when their hosts
// are the same (an IP address parsed, localhost as 127.0.0.1, another
// name by its spelling) or when one is
// a wildcard: "" and :: take the port on every address, IPv4 and IPv6
// (Go listens dual-stack), 0.0.0.0 on every IPv4 address only (see
// listenNetwork in internal/app), so it leaves IPv6 literals alone. Port
// 0 never clashes: each listener gets a free port of its own.
func checkListeners(p *problems, ls []listener) {
	for i, a := range ls {
		for _, b := range ls[i+1:] {
			if a.port == 0 || a.port != b.port || !hostsOverlap(a.host, b.host) {
				continue
			}
			p.badTogether(fmt.Sprintf("%s and %s would both listen on port %d%s: give one of them another port",
				a.flags, b.flags, a.port, overlapShown(a.host, b.host)))
		}
	}
}

// hostsOverlap reports whether listening on host a and on host b, on the
// same port, takes one socket twice.
func hostsOverlap(a, b string) bool {
	wa, wb := wildcard(a), wildcard(b)
	switch {
	case wa == anyFamily || wb == anyFamily:
		return true
	case wa == ipv4Only:
		return !isIPv6(b)
	case wb == ipv4Only:
		return !isIPv6(a)
	}
	ia, erra := netip.ParseAddr(loopbackName(a))
	ib, errb := netip.ParseAddr(loopbackName(b))
	if erra == nil && errb == nil {
		return ia.Unmap() == ib.Unmap()
	}
	return strings.EqualFold(a, b)
}

// loopbackName is the address Go listens on for localhost, the one name
// compared by address (warcprox's default --address, so its users write
// it): net.Listen takes the first IPv4 address a name resolves to, and
// localhost is 127.0.0.1 on every system this runs on. Other names are
// not resolved at validation, which must not wait on DNS.
func loopbackName(host string) string {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return "127.0.0.1"
	}
	return host
}

// overlapShown says where two overlapping hosts meet, for the message.
func overlapShown(a, b string) string {
	switch {
	case wildcard(a) != notWildcard && wildcard(b) != notWildcard:
		return " of every address"
	case wildcard(a) != notWildcard:
		return fmt.Sprintf(" (%s is every address, %s among them)", shownHost(a), b)
	case wildcard(b) != notWildcard:
		return fmt.Sprintf(" (%s is every address, %s among them)", shownHost(b), a)
	}
	return " of " + a
}

type wildcardKind int

const (
	notWildcard wildcardKind = iota
	ipv4Only                 // 0.0.0.0
	anyFamily                // "" or ::
)

func wildcard(host string) wildcardKind {
	if host == "" {
		return anyFamily
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err != nil || !ip.IsUnspecified():
		return notWildcard
	case ip.Is4():
		return ipv4Only
	}
	return anyFamily
}

// isIPv6 reports whether host is an IPv6 literal (not IPv4-mapped).
func isIPv6(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Is6() && !ip.Is4In6()
}
