package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/internal/bufpool"
)

// Outbound is one request as RoundTrip sends it.
type Outbound struct {
	Method string
	Head   []byte    // request line and headers, CRLF CRLF included
	Body   io.Reader // nil when the request has no body
	Length int64     // -1: send chunked
	Expect bool      // wait for 100 Continue before sending the body
	// Upgrade: the request asks to switch protocols (a WebSocket
	// handshake); only then may the answer be 101 Switching Protocols.
	Upgrade bool
	ReqRec  io.Writer // receives the request bytes as written (may be nil)
	ResRec  io.Writer // receives the response bytes as read (may be nil)
	// Ctx, the request's context, bounds what RoundTrip does beside c
	// (asking a parent proxy whether a 401 is its own); nil: none.
	Ctx context.Context
}

// RoundTrip writes the request and reads the final response head on c.
// It returns the response (whose Body reads from c.br) and the offset, in
// bytes read since the sink was attached, where the final status line starts.
func (u *Client) RoundTrip(c *Conn, out *Outbound) (*http.Response, int64, error) {
	resp, start, err := u.roundTrip(c, out)
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols && !out.Upgrade {
		// RFC 9110 15.2.2: a server must not switch to a protocol the
		// client did not ask for. Passed on, the client's connection
		// would become a tunnel whose later exchanges nobody records.
		return nil, 0, ErrUnaskedUpgrade
	}
	if err != nil && c.fwdRoute != nil {
		err = c.fwdRoute.through(err)
	}
	if err == nil && c.fwdRoute != nil && u.parentRefused(out.Ctx, c, resp) {
		return nil, 0, c.fwdRoute.fail("auth", fmt.Errorf("refused the request for %s: %s", c.fwdOrigin, resp.Status))
	}
	return resp, start, err
}

func (u *Client) roundTrip(c *Conn, out *Outbound) (*http.Response, int64, error) {
	c.rd.sink, c.wr.sink = out.ResRec, out.ReqRec
	c.rd.n = 0
	if err := c.writeHead(out.Head); err != nil {
		return nil, 0, err
	}
	req := &http.Request{Method: out.Method}
	var early *http.Response
	var start int64
	if out.Body != nil {
		send := true
		if out.Expect {
			resp, s, err := u.awaitContinue(c, req)
			if err != nil {
				return nil, 0, err
			}
			if resp != nil { // a final answer instead of 100: the body stays unsent
				early, start, send = resp, s, false
			}
		}
		if send {
			if err := u.sendBody(c, out); err != nil {
				var cbe *ClientBodyError
				if errors.As(err, &cbe) {
					return nil, 0, err // the client's fault: don't wait for the origin
				}
				// The origin may have answered and closed early (413, 401...);
				// a response already on the wire is still worth reading. The
				// connection is unusable after a failed write.
				if resp, s, rerr := readFinal(c, req); rerr == nil {
					resp.Close = true
					return resp, s, nil
				}
				return nil, 0, err
			}
		}
	}
	if early != nil {
		early.Close = true // the declared body was never sent
		return early, start, nil
	}
	return readFinal(c, req)
}

// writeHead sends the request head. To a parent proxy the socket gets the
// absolute form and the parent's credentials while the request record gets
// the origin-form head, what an origin receives.
func (c *Conn) writeHead(head []byte) error {
	if c.fwdRoute == nil {
		if _, err := c.bw.Write(head); err != nil {
			return err
		}
		return c.bw.Flush()
	}
	sink := c.wr.sink
	c.wr.sink = nil
	_, err := c.bw.Write(absoluteHead(head, c.fwdOrigin, c.fwdRoute.proxyAuth))
	if err == nil {
		err = c.bw.Flush()
	}
	c.wr.sink = sink
	if err == nil && sink != nil {
		_, _ = sink.Write(head)
	}
	return err
}

func (u *Client) sendBody(c *Conn, out *Outbound) error {
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	var w io.Writer = c.bw
	var cw io.WriteCloser
	if out.Length < 0 {
		cw = httputil.NewChunkedWriter(c.bw)
		w = cw
	}
	if _, err := io.CopyBuffer(w, out.Body, *buf); err != nil {
		return &ClientBodyError{err}
	}
	if cw != nil {
		if err := cw.Close(); err != nil {
			return err
		}
		if _, err := c.bw.WriteString("\r\n"); err != nil {
			return err
		}
	}
	return c.bw.Flush()
}

// awaitContinue waits a short while for the origin's 100 Continue. It
// returns a non-nil response if the origin answered with a final status
// instead, and nil if the body should be sent (100 seen, or no answer in
// time, as RFC 9110 allows).
func (u *Client) awaitContinue(c *Conn, req *http.Request) (*http.Response, int64, error) {
	c.rd.limit = c.rd.n + maxResponseHeadBytes // for all interim heads together
	defer func() { c.rd.limit = 0 }()
	for range maxInterimResponses {
		c.rd.deadline = time.Now().Add(expectContinueWait)
		_, err := c.br.Peek(1)
		c.rd.deadline = time.Time{}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		start := c.Consumed()
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, 0, headError(err)
		}
		if resp.StatusCode == http.StatusContinue {
			return nil, 0, nil
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, start, nil
		}
		// Another interim response (102, 103): keep waiting.
	}
	return nil, 0, ErrTooManyInterim
}

// readFinal reads responses until a final one (or 101), skipping interim
// 1xx responses, which are not part of the response record. The head limit
// covers the interim responses and the final head together.
func readFinal(c *Conn, req *http.Request) (*http.Response, int64, error) {
	c.rd.limit = c.rd.n + maxResponseHeadBytes
	defer func() { c.rd.limit = 0 }()
	for range maxInterimResponses + 1 {
		start := c.Consumed()
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, 0, headError(err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, start, nil
		}
	}
	return nil, 0, ErrTooManyInterim
}

func headError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("upstream closed the connection before a complete response: %w", err)
	}
	if errors.Is(err, ErrResponseHeadTooLarge) || errors.Is(err, ErrTooManyInterim) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrNotHTTP, err)
}

// ClientBodyError is a failure to read the request body from the client.
type ClientBodyError struct{ err error }

func (e *ClientBodyError) Error() string { return "reading request body from client: " + e.err.Error() }
func (e *ClientBodyError) Unwrap() error { return e.err }

// IsStale reports whether err on a reused connection means the origin had
// closed it while idle, so the request can be sent again on a new one.
func IsStale(c *Conn, err error) bool {
	if !c.reused || c.rd.n > 0 {
		return false
	}
	var cbe *ClientBodyError
	if errors.As(err, &cbe) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe")
}
