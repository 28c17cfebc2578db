//go:build !unix

package wire

import "net"

// alive cannot peek on this platform; a stale connection is caught by the
// retry instead.
func alive(net.Conn) bool { return true }
