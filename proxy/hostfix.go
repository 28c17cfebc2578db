package proxy

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Brozzler sends every WARCPROX_WRITE_RECORD (screenshots, thumbnails,
// videos, yt-dlp metadata) with "Host: N/A" (brozzler/worker.py
// _warcprox_write_record, since 2015). warcprox ignores the Host of those
// requests; net/http refuses a Host with a "/" in it ("400 Bad Request:
// malformed Host header") before any handler runs, and has no option to
// allow it. So the client's byte stream is filtered on its way to net/http:
// in the head of a WARCPROX_WRITE_RECORD or PUTMETA request, a Host header
// net/http would refuse is emptied ("Host: "), and an HTTP/1.1 head with no
// Host at all (warcprox's API documentation sends one so, with ncat) gets
// an empty one, which net/http requires of HTTP/1.1. Nothing else is changed.
//
// The filter follows request boundaries as long as they are certain: heads
// whose body is framed by Content-Length (or has none). After a request
// with Transfer-Encoding, Expect, Upgrade, CONNECT, or anything it does not
// understand, it passes the rest of the connection through untouched, so it
// can never alter a body; the worst case is that a later write-record on
// that same connection keeps its invalid Host and gets net/http's 400.

// hostFilter states.
const (
	hfRequestLine = iota // at the start of a request head
	hfLineStart          // at the start of a header line
	hfStreamLine         // inside a line that is passed on as it comes
	hfHoldLine           // inside a line kept until its end (Host, framing headers)
	hfBody               // skipping a Content-Length body
	hfPassthrough        // no longer looking
)

const (
	hfClassifyBytes = 32       // bytes looked at to tell a line's kind
	hfMaxHeldLine   = 16 << 10 // longest framing or Host line kept whole
)

// hostFilter is the state of one connection's filter. It is used by one
// reader at a time (net/http reads a connection from one goroutine at a
// time).
type hostFilter struct {
	state  int
	held   []byte // start of the current line, not yet passed on
	remain int64  // body bytes still to skip in hfBody

	// What the current head has said so far.
	writeRecord bool  // method is WARCPROX_WRITE_RECORD or PUTMETA
	hasHost     bool  // a Host line was seen
	length      int64 // Content-Length, -1 when none
	unsure      bool  // framing the filter cannot follow
}

// filter passes in through, appending to out what the reader gets, and
// returns out. Bytes it holds back (the start of a line) come out with a
// later call, or from flush.
func (f *hostFilter) filter(out, in []byte) []byte {
	for len(in) > 0 {
		switch f.state {
		case hfPassthrough:
			return append(out, in...)
		case hfBody:
			n := int64(len(in))
			if n > f.remain {
				n = f.remain
			}
			out = append(out, in[:n]...)
			in = in[n:]
			f.remain -= n
			if f.remain == 0 {
				f.state = hfRequestLine
			}
		case hfStreamLine:
			i := bytes.IndexByte(in, '\n')
			if i < 0 {
				return append(out, in...)
			}
			out = append(out, in[:i+1]...)
			in = in[i+1:]
			f.state = hfLineStart
		case hfRequestLine, hfLineStart, hfHoldLine:
			i := bytes.IndexByte(in, '\n')
			take := len(in)
			if i >= 0 {
				take = i + 1
			}
			limit := hfClassifyBytes
			if f.state == hfHoldLine {
				limit = hfMaxHeldLine
			}
			if i < 0 && len(f.held)+take < limit {
				f.held = append(f.held, in...)
				return out
			}
			if i < 0 {
				take = limit - len(f.held)
			}
			f.held = append(f.held, in[:take]...)
			in = in[take:]
			out = f.line(out, i >= 0 && take == i+1)
		}
	}
	return out
}

// line decides about the held start of a line (complete says whether it
// ends with its "\n") and appends what is passed on.
func (f *hostFilter) line(out []byte, complete bool) []byte {
	held := f.held
	f.held = f.held[:0]
	// Decisions look at the first bytes only, so that they do not depend
	// on how the stream was split into reads.
	start := held[:min(len(held), hfClassifyBytes)]
	switch f.state {
	case hfRequestLine:
		method, _, ok := bytes.Cut(start, []byte(" "))
		if !ok {
			f.state = hfPassthrough // no method within the first bytes
			return append(out, held...)
		}
		m := string(method)
		f.writeRecord = m == methodWriteRecord || m == methodPutMeta
		f.hasHost, f.length, f.unsure = false, -1, m == "CONNECT"
		f.state = hfStreamLine
		if complete {
			f.state = hfLineStart
		}
		return append(out, held...)
	case hfLineStart:
		if complete && len(bytes.TrimRight(held, "\r\n")) == 0 {
			if f.writeRecord && !f.hasHost {
				// Before the blank line, ending as it ends. HTTP/1.0
				// heads get one too: net/http reads an empty Host as none.
				out = append(append(out, "Host: "...), held...)
			}
			return f.endHead(append(out, held...))
		}
		if held[0] == ' ' || held[0] == '\t' {
			// A folded line: something the filter does not follow.
			f.state = hfPassthrough
			return append(out, held...)
		}
		name, _, ok := bytes.Cut(start, []byte(":"))
		if !ok {
			name = nil // a long name (none the filter cares about), or malformed
		}
		if heldName(name) != "" {
			if complete {
				return f.header(out, held)
			}
			f.held = append(f.held, held...)
			f.state = hfHoldLine
			return out
		}
		f.state = hfStreamLine
		if complete {
			f.state = hfLineStart
		}
		return append(out, held...)
	default: // hfHoldLine
		if !complete {
			f.state = hfPassthrough // too long to be a sane framing header
			return append(out, held...)
		}
		return f.header(out, held)
	}
}

// heldNames are the header lines the filter reads whole.
var heldNames = [...]string{"host", "content-length", "transfer-encoding", "expect", "upgrade"}

// heldName returns which of heldNames name is (any case), or "". It runs
// for every header line of every request, so it does not allocate.
func heldName(name []byte) string {
	for _, n := range heldNames {
		if len(name) == len(n) && strings.EqualFold(string(name), n) {
			return n
		}
	}
	return ""
}

// header takes note of one whole line the filter cares about, rewriting a
// write-record's invalid Host.
func (f *hostFilter) header(out, line []byte) []byte {
	f.state = hfLineStart
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.Trim(value, " \t\r\n")
	switch heldName(name) {
	case "host":
		f.hasHost = true
		if f.writeRecord && !httpguts.ValidHostHeader(string(value)) {
			out = append(out, "Host: "...)
			if bytes.HasSuffix(line, []byte("\r\n")) {
				out = append(out, '\r')
			}
			return append(out, '\n')
		}
	case "content-length":
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (f.length >= 0 && f.length != n) {
			f.unsure = true
		}
		f.length = n
	default: // Transfer-Encoding, Expect, Upgrade
		f.unsure = true
	}
	return append(out, line...)
}

// endHead is called after the blank line that ends a head.
func (f *hostFilter) endHead(out []byte) []byte {
	switch {
	case f.unsure:
		f.state = hfPassthrough
	case f.length > 0:
		f.state, f.remain = hfBody, f.length
	default:
		f.state = hfRequestLine
	}
	return out
}

// flush gives up filtering and returns the bytes held back.
func (f *hostFilter) flush() []byte {
	held := f.held
	f.held = nil
	f.state = hfPassthrough
	return held
}

// hostFilterReader applies a hostFilter to a connection's reads.
type hostFilterReader struct {
	f   hostFilter
	out []byte // filtered, not yet returned
	off int
	buf []byte
}

func (r *hostFilterReader) read(src io.Reader, p []byte) (int, error) {
	for {
		if r.off < len(r.out) {
			n := copy(p, r.out[r.off:])
			r.off += n
			return n, nil
		}
		r.out, r.off = r.out[:0], 0
		if r.f.state == hfPassthrough {
			return src.Read(p)
		}
		if r.f.state == hfBody {
			// Bodies go straight through.
			n, err := src.Read(p[:min(int64(len(p)), r.f.remain)])
			r.f.remain -= int64(n)
			if r.f.remain == 0 {
				r.f.state = hfRequestLine
			}
			return n, err
		}
		if r.buf == nil {
			r.buf = make([]byte, 4096)
		}
		n, err := src.Read(r.buf)
		r.out = r.f.filter(r.out, r.buf[:n])
		if err != nil {
			if err == io.EOF {
				// Whatever was held back is all there is.
				r.out = append(r.out, r.f.flush()...)
			}
			if len(r.out) > 0 {
				n := copy(p, r.out)
				r.off = n
				if r.off == len(r.out) {
					return n, err
				}
				return n, nil // the error comes back with the next read
			}
			return 0, err
		}
	}
}
