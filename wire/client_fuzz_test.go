package wire

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// scriptedConn is an origin connection that answers with fixed bytes and
// swallows what is written to it.
type scriptedConn struct {
	r *bytes.Reader
}

func (c *scriptedConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *scriptedConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *scriptedConn) Close() error                { return nil }
func (c *scriptedConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *scriptedConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
}
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzUpstreamResponse feeds arbitrary bytes as an origin's answer to the
// parser that wire-exact capture relies on. It must never panic; when it
// accepts a response, the recorded bytes are exactly the bytes read off the
// connection, the response starts within them, and the body never claims
// more bytes than were recorded.
func FuzzUpstreamResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nclose-delimited body",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 999 Weird\r\nX: \x00\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	u := NewClient(Options{SocketTimeout: time.Second})
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := &scriptedConn{r: bytes.NewReader(data)}
		c := u.newConn("fuzz", conn, conn, false)
		var rec bytes.Buffer
		out := &Outbound{Method: http.MethodGet, Head: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ResRec: &rec}
		resp, start, err := u.RoundTrip(c, out)
		if err != nil {
			return
		}
		if start < 0 || start > int64(rec.Len()) {
			t.Fatalf("response starts at %d of %d recorded bytes", start, rec.Len())
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		consumed := c.Consumed()
		if consumed > int64(rec.Len()) {
			t.Fatalf("parser consumed %d bytes, only %d recorded", consumed, rec.Len())
		}
		if !bytes.Equal(rec.Bytes(), data[:rec.Len()]) {
			t.Fatal("recorded bytes differ from the bytes on the wire")
		}
		if int64(len(body)) > consumed-start {
			t.Fatalf("body of %d bytes from %d bytes of response", len(body), consumed-start)
		}
	})
}
