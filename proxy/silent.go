package proxy

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// A client connection on which no request has been read holds net/http's
// Shutdown for 5 s: it waits that long for a first request before it
// counts such a connection as idle, though a request it reads once the
// shutdown has begun is dropped unanswered. Browsers open connections
// ahead of need and crawlers keep spare ones, so most stops would take
// 5 s. The proxy closes them itself: at once those that have sent nothing,
// and after partialGrace those still in the middle of a request head (a
// whole head read just before the shutdown began is being answered by then,
// so it is no longer new).

const (
	// silentCheck is how often, while the shutdown waits, new connections
	// are looked at.
	silentCheck = 100 * time.Millisecond
	// partialGrace is how long a connection that has sent part of a
	// request may stay new once the shutdown has begun.
	partialGrace = 250 * time.Millisecond
)

// freshConns are the connections the http.Servers have accepted and not
// yet read a request from (http.StateNew).
type freshConns struct {
	mu    sync.Mutex
	conns map[*servedConn]struct{}
}

// track is the http.Servers' ConnState hook. HTTP/2 connections (a bare
// *tls.Conn) are left out: net/http's HTTP/2 server ends idle ones itself
// on Shutdown. It runs at every request of a keep-alive connection: only
// a connection's first change of state, out of StateNew, takes the lock.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	sc, ok := c.(*servedConn)
	if !ok {
		return
	}
	if state != http.StateNew {
		if sc.listed.CompareAndSwap(true, false) {
			f.mu.Lock()
			delete(f.conns, sc)
			f.mu.Unlock()
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		f.conns = make(map[*servedConn]struct{})
	}
	f.conns[sc] = struct{}{}
	sc.listed.Store(true)
}

// closeSilent closes the connections that have not sent a byte, and with
// partial those that have sent part of a request.
func (f *freshConns) closeSilent(partial bool) {
	var silent []*servedConn
	f.mu.Lock()
	for c := range f.conns {
		if partial || !c.heard.Load() {
			silent = append(silent, c)
			delete(f.conns, c)
			c.listed.Store(false)
		}
	}
	f.mu.Unlock()
	// Closed outside the lock: closing a tunnel's TLS connection writes
	// close_notify, which may wait, and every connection's ConnState hook
	// takes the lock.
	for _, c := range silent {
		c.Close()
	}
}

// closeSilentUntil closes new connections every silentCheck until stop is
// closed: while Shutdown waits for the rest.
func (f *freshConns) closeSilentUntil(stop <-chan struct{}) {
	begun := time.Now()
	t := time.NewTicker(silentCheck)
	defer t.Stop()
	for {
		f.closeSilent(time.Since(begun) >= partialGrace)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}
