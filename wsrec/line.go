package wsrec

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/warcproxy/warcproxy/internal/jsonstr"
)

// line is one message of the log, as browsertrix-crawler writes Chrome
// DevTools' WebSocketFrame: {"ts", "type", "opcode", "mask",
// "payloadData"}, and for a close frame its code and reason.
type line struct {
	ts      time.Duration // since the handshake's response
	send    bool          // client to server
	opcode  byte
	masked  bool
	payload io.Reader
	// A close frame's status code (0: none sent) and reason.
	closeCode   int
	closeReason string
}

// encoder writes lines, reusing its buffers.
type encoder struct {
	buf []byte
	in  []byte
}

// write writes l as one JSON line to w.
func (e *encoder) write(w io.Writer, l *line) error {
	b := append(e.buf[:0], `{"ts":`...)
	b = strconv.AppendFloat(b, l.ts.Seconds(), 'f', 6, 64)
	b = append(b, `,"type":"`...)
	if l.send {
		b = append(b, "send"...)
	} else {
		b = append(b, "recv"...)
	}
	b = append(b, `","opcode":`...)
	b = strconv.AppendInt(b, int64(l.opcode), 10)
	b = append(b, `,"mask":`...)
	b = strconv.AppendBool(b, l.masked)
	if l.opcode == opClose && l.closeCode != 0 {
		b = append(b, `,"closeCode":`...)
		b = strconv.AppendInt(b, int64(l.closeCode), 10)
		b = append(b, `,"closeReason":"`...)
		b = appendText(b, []byte(l.closeReason))
		b = append(b, '"')
	}
	b = append(b, `,"payloadData":"`...)
	e.buf = b
	var err error
	if l.opcode == opText {
		err = e.text(w, l.payload)
	} else {
		err = e.base64(w, l.payload)
	}
	if err != nil {
		return err
	}
	e.buf = append(e.buf, "\"}\n"...)
	_, err = w.Write(e.buf)
	return err
}

// flushAt writes out the line so far once it is this long.
const flushAt = 32 << 10

// text streams a text payload as a JSON string: escaped, UTF-8 kept as
// is, invalid UTF-8 replaced by U+FFFD (as encoding/json does).
func (e *encoder) text(w io.Writer, r io.Reader) error {
	if e.in == nil {
		e.in = make([]byte, 16<<10)
	}
	// The first UTFMax bytes of e.in hold an incomplete sequence left at
	// the end of the last read, in front of the next one.
	pending := 0
	for {
		n, err := r.Read(e.in[utf8.UTFMax:])
		chunk := e.in[utf8.UTFMax-pending : utf8.UTFMax+n]
		keep := 0
		if err == nil {
			keep = incompleteTail(chunk)
		}
		e.buf = appendText(e.buf, chunk[:len(chunk)-keep])
		pending = copy(e.in[utf8.UTFMax-keep:utf8.UTFMax], chunk[len(chunk)-keep:])
		if len(e.buf) >= flushAt {
			if _, werr := w.Write(e.buf); werr != nil {
				return werr
			}
			e.buf = e.buf[:0]
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// incompleteTail is how many bytes at the end of p start a UTF-8 sequence
// that p does not complete.
func incompleteTail(p []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(p); i++ {
		c := p[len(p)-i]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// appendText appends p escaped for a JSON string.
func appendText(b, p []byte) []byte {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			b = jsonstr.AppendASCII(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, p[i:i+size]...)
		}
		i += size
	}
	return b
}

// base64 streams a payload as standard base64 (what DevTools gives for
// binary frames).
func (e *encoder) base64(w io.Writer, r io.Reader) error {
	if e.in == nil {
		e.in = make([]byte, 16<<10)
	}
	// Whole groups of 3 bytes per read, so that no padding appears
	// mid-string; the leftover goes in front of the next read.
	held := 0
	for {
		n, err := r.Read(e.in[held : len(e.in)-len(e.in)%3])
		n += held
		whole := n - n%3
		if err != nil {
			whole = n
		}
		e.buf = base64.StdEncoding.AppendEncode(e.buf, e.in[:whole])
		held = copy(e.in, e.in[whole:n])
		if len(e.buf) >= flushAt {
			if _, werr := w.Write(e.buf); werr != nil {
				return werr
			}
			e.buf = e.buf[:0]
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// closeDetails reads a close frame's payload: a status code, then a UTF-8
// reason (RFC 6455 5.5.1); an empty payload has neither.
func closeDetails(p []byte) (int, string) {
	if len(p) < 2 {
		return 0, ""
	}
	return int(binary.BigEndian.Uint16(p)), string(p[2:])
}
