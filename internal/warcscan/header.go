package warcscan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"golang.org/x/net/http/httpguts"
)

// MaxKeptLine is how much of each header line the grammar reads values
// from: a field name must end (at its colon) within it and a Content-Length
// line must fit in it. The rest of a longer line is checked and streamed,
// so a URI of megabytes costs no memory.
const MaxKeptLine = 256

// Header is a record's header.
type Header struct {
	Version       string // "WARC/1.0" or "WARC/1.1"
	ContentLength int64
	// Raw is the header as it is in the file, from the version line to the
	// blank line that ends it, each line with its CRLF; nil when the
	// scanner skips headers (Options.SkipHeaders).
	Raw []byte
}

// Get returns the value of the first field called name (in any case):
// without the spaces and tabs around it, its continuation lines joined
// with one space. It reads Raw, so it finds nothing in a skipped header.
func (h *Header) Get(name string) (string, bool) {
	_, rest, _ := bytes.Cut(h.Raw, []byte("\r\n")) // the version line
	var (
		value []byte
		found bool
	)
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		switch {
		case len(line) == 0: // the end of the header
			return string(value), found
		case line[0] == ' ' || line[0] == '\t':
			if found {
				value = append(value, ' ')
				value = append(value, bytes.Trim(line, " \t")...)
			}
		case found:
			return string(value), found
		default:
			n, v, _ := bytes.Cut(line, []byte(":"))
			if found = bytes.EqualFold(n, []byte(name)); found {
				value = append(value, bytes.Trim(v, " \t")...)
			}
		}
	}
	return string(value), found
}

// readHeader reads a record's header from s.rd into h, or returns why what
// follows is not one (any read error, io.EOF included, is part of that
// reason).
func (s *Scanner) readHeader(h *Header) error {
	s.raw = s.raw[:0]
	long, err := s.readLine()
	if err != nil {
		return fmt.Errorf("version line: %w", err)
	}
	// Constants rather than string(s.line): no allocation per record.
	switch {
	case !long && string(s.line) == "WARC/1.0":
		h.Version = "WARC/1.0"
	case !long && string(s.line) == "WARC/1.1":
		h.Version = "WARC/1.1"
	default:
		return errors.New("no WARC/1.0 or WARC/1.1 line")
	}
	var (
		contentLength              int64 = -1
		haveType, haveID, haveDate bool
		prevCL, havePrev           bool
	)
	for {
		long, err := s.readLine()
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		line := s.line
		if len(line) == 0 && !long {
			break // end of header
		}
		if line[0] == ' ' || line[0] == '\t' {
			// A continuation of the previous field's value.
			if !havePrev || prevCL {
				return errors.New("header: misplaced continuation line")
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !httpguts.ValidHeaderFieldName(string(line[:colon])) {
			return errors.New("header: bad field line")
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		havePrev, prevCL = true, false
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if contentLength >= 0 {
				return errors.New("header: Content-Length repeated")
			}
			n, ok := parseLength(value)
			if long || !ok {
				return errors.New("header: bad Content-Length")
			}
			contentLength, prevCL = n, true
		case bytes.EqualFold(name, []byte("WARC-Type")):
			haveType = true
		case bytes.EqualFold(name, []byte("WARC-Record-ID")):
			haveID = true
		case bytes.EqualFold(name, []byte("WARC-Date")):
			haveDate = true
		}
	}
	switch {
	case contentLength < 0:
		return errors.New("header: no Content-Length")
	case !haveType || !haveID || !haveDate:
		return errors.New("header: WARC-Type, WARC-Record-ID or WARC-Date missing")
	}
	h.ContentLength = contentLength
	h.Raw = nil
	if s.keep {
		h.Raw = s.raw
	}
	return nil
}

// parseLength parses a Content-Length value: decimal digits only.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readLine reads one header line ending in CRLF. It keeps up to
// MaxKeptLine bytes of it in s.line (without the CRLF) and reports whether
// the line was longer; a kept header gets the whole line in s.raw. A line
// with a control character other than tab, a CR not followed by LF or an
// LF without CR is refused.
func (s *Scanner) readLine() (long bool, err error) {
	s.line = s.line[:0]
	cr := false // the previous byte was CR
	for {
		chunk, err := s.rd.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		for _, c := range chunk {
			switch {
			case c == '\n':
				if !cr {
					return false, errors.New("bare LF")
				}
			case cr:
				return false, errors.New("bare CR")
			case c == '\r':
			case c < 0x20 && c != '\t', c == 0x7f:
				return false, fmt.Errorf("control character %#x", c)
			}
			cr = c == '\r'
		}
		if s.keep {
			if len(s.raw)+len(chunk) > s.maxHeader {
				return false, ErrHeaderTooLong
			}
			s.raw = append(s.raw, chunk...)
		}
		// Keep the start of the line's content. A CR ending a chunk is
		// left out: the next chunk starts with its LF, or the line is
		// refused above.
		done := err == nil // the chunk ends with LF, after a CR
		content := bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		if room := MaxKeptLine - len(s.line); len(content) > room {
			s.line = append(s.line, content[:room]...)
			long = true
		} else {
			s.line = append(s.line, content...)
		}
		if done {
			return long, nil
		}
	}
}
