package wire

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/warcproxy/warcproxy/internal/bufpool"
)

// Conn is one connection to an origin.
type Conn struct {
	key  string   // scheme://host:port|sni, and the route
	raw  net.Conn // the TCP connection
	conn net.Conn // raw, or the TLS connection over it
	ip   string   // "" through a route: the origin's address is unknown
	// tlsVersion and cipher name the TLS that carries the connection
	// ("" for plain HTTP), taken once at the handshake.
	tlsVersion, cipher string
	// fwdRoute is set on a connection to a parent proxy that takes
	// requests for fwdOrigin ("http://host:port") in absolute form.
	fwdRoute  *route
	fwdOrigin string
	rd        connReader
	br        *bufio.Reader
	wr        connWriter
	bw        *bufio.Writer
	reused    bool
	idleFrom  time.Time
}

// connReader reads from the origin, setting the Inactivity deadline before
// each read and copying every byte into the current exchange's sink.
type connReader struct {
	c       net.Conn
	timeout time.Duration
	sink    io.Writer // nil when not recording
	n       int64     // bytes read since the sink was attached
	limit   int64     // while > 0, reading past it fails (response head limit)
	// deadline, when set, overrides the Inactivity timeout (100-continue wait).
	deadline time.Time
	armed    Inactivity
	// fetchEnd, when set, is when the current exchange's --fetch-timeout
	// runs out: no read deadline goes past it.
	fetchEnd   time.Time
	fetchArmed bool
}

// Inactivity keeps a connection's deadline between now+timeout-slack and
// now+timeout, re-arming it only when it has aged by the slack (a second
// at most) instead of on every read or write: setting a deadline costs a
// runtime timer update, and this runs for every few KB of every body.
type Inactivity struct{ at time.Time }

func (a *Inactivity) Due(timeout time.Duration) (time.Time, bool) {
	now := time.Now()
	slack := min(timeout/4, time.Second)
	if a.at.Sub(now) >= timeout-slack {
		return time.Time{}, false
	}
	a.at = now.Add(timeout)
	return a.at, true
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.limit > 0 && r.n >= r.limit {
		return 0, ErrResponseHeadTooLarge
	}
	switch {
	case !r.deadline.IsZero():
		_ = r.c.SetReadDeadline(r.deadline)
		r.armed = Inactivity{} // re-arm the timeout once the override ends
	case r.fetchArmed:
		// The deadline is the fetch's end, already set.
	case !r.fetchEnd.IsZero() && (r.timeout <= 0 || time.Until(r.fetchEnd) <= r.timeout):
		_ = r.c.SetReadDeadline(r.fetchEnd)
		r.fetchArmed = true
	case r.timeout > 0:
		if at, ok := r.armed.Due(r.timeout); ok {
			_ = r.c.SetReadDeadline(at)
		}
	}
	n, err := r.c.Read(p)
	if n > 0 {
		r.n += int64(n)
		if r.sink != nil {
			_, _ = r.sink.Write(p[:n]) // the sink records its own failure
		}
	}
	return n, err
}

// connWriter writes to the origin and copies every byte into the sink.
type connWriter struct {
	c       net.Conn
	timeout time.Duration
	sink    io.Writer
	armed   Inactivity
}

func (w *connWriter) Write(p []byte) (int, error) {
	if w.timeout > 0 {
		if at, ok := w.armed.Due(w.timeout); ok {
			_ = w.c.SetWriteDeadline(at)
		}
	}
	n, err := w.c.Write(p)
	if n > 0 && w.sink != nil {
		_, _ = w.sink.Write(p[:n])
	}
	return n, err
}

// SetFetchEnd bounds the reads of the exchange that is starting on c
// (--fetch-timeout); a zero end lifts the bound.
func (c *Conn) SetFetchEnd(end time.Time) {
	c.rd.fetchEnd = end
	if c.rd.fetchArmed {
		c.rd.fetchArmed = false
		c.rd.armed = Inactivity{} // re-arm the Inactivity deadline
	}
}

func (u *Client) newConn(key string, raw, conn net.Conn, routed bool) *Conn {
	c := &Conn{key: key, raw: raw, conn: conn}
	if tc, ok := conn.(*tls.Conn); ok {
		st := tc.ConnectionState()
		c.tlsVersion, c.cipher = tlsVersionName(st.Version), tls.CipherSuiteName(st.CipherSuite)
	}
	// Through a route the remote address is the route's, not the origin's.
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok && !routed {
		c.ip = a.IP.String()
	}
	c.rd = connReader{c: conn, timeout: u.socketTimeout}
	c.wr = connWriter{c: conn, timeout: u.socketTimeout}
	c.br = bufio.NewReaderSize(&c.rd, bufpool.Size)
	c.bw = bufio.NewWriterSize(&c.wr, 8<<10)
	return c
}

// Consumed is the number of bytes of the current exchange that the parser
// has used: where the response read so far ends in its recording.
func (c *Conn) Consumed() int64 { return c.rd.n - int64(c.br.Buffered()) }

// IP is the origin's address as dialed ("" if not a TCP connection, or
// when a route dialed it).
func (c *Conn) IP() string { return c.ip }

// TLS names the TLS version ("tls/1.3") and cipher suite (its IANA name)
// that carried the connection to the origin, or "" and "" for plain
// HTTP. Through a parent proxy's CONNECT the TLS is still the origin's.
func (c *Conn) TLS() (version, cipher string) { return c.tlsVersion, c.cipher }

// tlsVersionName is the WARC-Protocol name of a TLS version.
func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "tls/1.0"
	case tls.VersionTLS11:
		return "tls/1.1"
	case tls.VersionTLS12:
		return "tls/1.2"
	case tls.VersionTLS13:
		return "tls/1.3"
	}
	return fmt.Sprintf("tls/0x%04x", v)
}

// Buffered is the number of response bytes read from the origin and not
// yet consumed by the parser: after a response's end, bytes the origin sent
// unasked, which make the connection unfit for reuse.
func (c *Conn) Buffered() int { return c.br.Buffered() }

// Close closes the connection (and TLS over it); it is not reused.
func (c *Conn) Close() error { return c.conn.Close() }

// Detach ends recording on c and lifts its deadlines, for a connection
// that becomes a byte tunnel after 101 Switching Protocols. It returns the
// connection and the reader holding what the origin already sent.
func (c *Conn) Detach() (net.Conn, *bufio.Reader) {
	c.rd.sink, c.wr.sink = nil, nil
	c.rd.timeout, c.wr.timeout = 0, 0
	_ = c.conn.SetDeadline(time.Time{})
	return c.conn, c.br
}
