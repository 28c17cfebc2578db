//go:build !unix

package proxy

import "net"

// alive cannot peek on this platform; a stale connection is caught by the
// retry instead.
func alive(net.Conn) bool { return true }
