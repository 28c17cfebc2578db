package mitm

import (
	"net"
	"strings"
)

// ValidHostName accepts DNS names (letters, digits, '-', '_', dots between
// labels) and IP addresses: what may become a certificate name and a file
// name in --certs-dir.
func ValidHostName(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 || h[0] == '.' || h[len(h)-1] == '.' || strings.Contains(h, "..") {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return true
}
