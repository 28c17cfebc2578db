package cdxj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// Limits that keep memory bounded whatever the file holds.
const (
	maxHeadBytes = 1 << 20 // WARC or HTTP head of one record
	// maxRequestBody is how much of a non-GET request body is kept to build
	// the query that warcio.js appends to the urlkey (it keeps 4096 UTF-16
	// units of the query; a JSON body must be whole to be parsed).
	maxRequestBody = 1 << 20
)

// record is what the index needs from one WARC record.
type record struct {
	offset, length int64

	warcType    string
	hasType     bool
	recordID    string
	targetURI   string
	hasTarget   bool
	refersToURI string // WARC-Refers-To-Target-URI of a revisit
	date        string
	payloadDig  string
	hasPayload  bool
	contentType string // WARC Content-Type
	hasCType    bool

	http *httpHead // nil if not parsed or empty

	body []byte // request records with a non-GET method: the start of the payload
}

// httpHead is the status line and header fields of an HTTP message, parsed
// as warcio.js parses them.
type httpHead struct {
	statusLine string
	fields     headers
}

// headers holds header fields as the WHATWG Headers class does: names
// case-insensitive, repeated fields joined with ", ".
type headers map[string]string

func (h headers) add(name, value string) {
	if !httpguts.ValidHeaderFieldName(name) || !validValue(value) {
		return // Headers.append throws; warcio.js drops the field
	}
	if hasNonLatin1(value) {
		// Headers.append throws on characters above U+00FF; warcio.js then
		// stores the value's UTF-8 bytes one character each.
		value = latin1Chars(value)
	}
	k := strings.ToLower(name)
	if prev, ok := h[k]; ok {
		h[k] = prev + ", " + value
		return
	}
	h[k] = value
}

func (h headers) get(name string) (string, bool) {
	v, ok := h[strings.ToLower(name)]
	return v, ok
}

func hasNonLatin1(s string) bool {
	for _, r := range s {
		if r > 0xff {
			return true
		}
	}
	return false
}

func latin1Chars(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

func validValue(s string) bool {
	return !strings.ContainsAny(s, "\x00\r\n")
}

// method is the request method of a request head (the status line up to
// the first space).
func (h *httpHead) method() string {
	m, _, _ := strings.Cut(h.statusLine, " ")
	return m
}

// status is the status code of a response head as warcio.js serializes
// Number(second word of the status line), or "" when there is none.
func (h *httpHead) status() string {
	parts := strings.Split(h.statusLine, " ")
	if len(parts) < 2 {
		return ""
	}
	return numberString(parts[1])
}

// numberString formats Number(s) the way JavaScript's String(Number(s)) does,
// for the strings a status line holds.
func numberString(s string) string {
	t := strings.TrimFunc(s, isJSSpace)
	if t == "" {
		return "0"
	}
	if len(t) > 2 && t[0] == '0' {
		base := 0
		switch t[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			n, err := strconv.ParseUint(t[2:], base, 64)
			if err != nil {
				return "NaN"
			}
			return formatJSFloat(float64(n))
		}
	}
	for _, c := range t {
		if !strings.ContainsRune("0123456789+-.eE", c) {
			if t == "Infinity" || t == "+Infinity" {
				return "Infinity"
			}
			if t == "-Infinity" {
				return "-Infinity"
			}
			return "NaN"
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return formatJSFloat(f)
		}
		return "NaN"
	}
	return formatJSFloat(f)
}

// formatJSFloat is Number.prototype.toString for finite numbers and the
// infinities.
func formatJSFloat(f float64) string {
	switch {
	case f != f:
		return "NaN"
	case f > 1.7976931348623157e308:
		return "Infinity"
	case f < -1.7976931348623157e308:
		return "-Infinity"
	case f == 0:
		return "0"
	}
	a := f
	if a < 0 {
		a = -a
	}
	if a >= 1e-7 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// isJSSpace reports whether String.prototype.trim removes r.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func jsTrim(s string) string      { return strings.TrimFunc(s, isJSSpace) }
func jsTrimEnd(s string) string   { return strings.TrimRightFunc(s, isJSSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, isJSSpace) }

// readLine reads one line including its "\n" (or up to EOF), taking its
// length from *budget. The line is only valid until the next read.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	frag, err := br.ReadSlice('\n')
	*budget -= len(frag)
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		return frag, err
	}
	line := slices.Clone(frag)
	for errors.Is(err, bufio.ErrBufferFull) {
		if *budget < 0 {
			return nil, errors.New("record head too long")
		}
		frag, err = br.ReadSlice('\n')
		*budget -= len(frag)
		line = append(line, frag...)
	}
	return line, err
}

// parseHead reads a status line and the header fields after it, as
// warcio.js's StatusAndHeadersParser does: the fields end at the first
// CRLFCRLF after the status line's own CRLF, so a head without fields
// ("HTTP/1.1 204\r\n\r\n") runs on into the body. When the block ends
// first, warcio.js reads on into the CRLFCRLF that ends the record, and so
// does parseHead, from overflow (if not nil). It returns nil at EOF or when
// the status line is blank.
func parseHead(br *bufio.Reader, overflow io.ByteScanner) (*httpHead, error) {
	budget := maxHeadBytes
	first, err := readLine(br, &budget)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	status := jsTrimEnd(decodeUTF8(first))
	if status == "" {
		return nil, nil
	}
	end := []byte("\r\n\r\n")
	var buf bytes.Buffer
	for err == nil {
		var line []byte
		line, err = readLine(br, &budget)
		if budget < 0 {
			return nil, errors.New("record head too long")
		}
		buf.Write(line)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if bytes.HasSuffix(buf.Bytes(), end) {
			break
		}
	}
	if errors.Is(err, io.EOF) && overflow != nil {
		for range 4 {
			if bytes.HasSuffix(buf.Bytes(), end) {
				break
			}
			c, err := overflow.ReadByte()
			if err != nil {
				break
			}
			if c != '\r' && c != '\n' {
				_ = overflow.UnreadByte()
				break
			}
			buf.WriteByte(c)
		}
	}
	h := &httpHead{statusLine: status, fields: headers{}}
	parseFields(decodeUTF8(buf.Bytes()), h.fields)
	return h, nil
}

// parseFields is StatusAndHeadersParser's loop over the header text.
func parseFields(text string, h headers) {
	start := 0
	name := ""
	value := ""
	have := false
	for start < len(text) {
		valueEnd := strings.IndexByte(text[start:], '\n')
		if valueEnd >= 0 {
			valueEnd += start
		}
		end := len(text)
		if valueEnd >= 0 {
			end = valueEnd
		}
		if have && value != "" && (text[start] == ' ' || text[start] == '\t') {
			value += jsTrimEnd(text[start:end])
		} else {
			if have && value != "" {
				h.add(name, value)
			}
			have = false
			nameEnd := strings.IndexByte(text[start:], ':')
			if nameEnd >= 0 {
				nameEnd += start
			}
			if nameEnd >= 0 && nameEnd < valueEnd {
				name = jsTrimStart(text[start:nameEnd])
				value = jsTrim(text[nameEnd+1 : end])
				have = true
			}
		}
		if valueEnd < 0 {
			break
		}
		start = valueEnd + 1
	}
	if have && value != "" {
		h.add(name, value)
	}
}

// decodeUTF8 is TextDecoder("utf-8").decode: invalid bytes become U+FFFD
// and a leading byte order mark is dropped.
func decodeUTF8(b []byte) string {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// nextRecord reads the next record of ws and returns what the index needs
// from it, or nil at the end of the file. block is reused to read each
// record's block. If visit is not nil, a response record with an HTTP head
// is handed to it, with block just after the head, before the record is
// finished.
func nextRecord(ws *warcscan.Scanner, block *bufio.Reader, visit func(*record, *bufio.Reader) error) (*record, error) {
	wr, err := ws.Next()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, ranOn, err := parseRecord(wr, block)
	if err != nil {
		return nil, fmt.Errorf("record at offset %d: %w", wr.Offset, err)
	}
	r.offset = wr.Offset
	if visit != nil && (r.warcType == "response" || r.warcType == "revisit") && r.http != nil {
		if err := visit(r, block); err != nil {
			return nil, err
		}
	}
	if err := ws.Finish(); err != nil {
		return nil, err
	}
	r.length = wr.Length
	if ws.Codec() == warcscan.None {
		// warcio.js ends a record of a .warc file with its block, or with
		// what an HTTP head ran on into after it.
		r.length -= int64(len(recordEnd) - ranOn)
	}
	return r, nil
}

// recordEnd is what follows a block in a whole record.
const recordEnd = "\r\n\r\n"

// parseRecord reads the WARC header fields of wr and, for a request,
// response or revisit, the HTTP head at the start of its block (and a
// non-GET request's body). It returns how many bytes of the recordEnd
// after the block an HTTP head without header fields ran on into, as
// warcio.js reads it (see parseHead).
func parseRecord(wr *warcscan.Record, block *bufio.Reader) (*record, int, error) {
	// warcio.js parses the lines after the version line.
	_, text, _ := bytes.Cut(wr.Header.Raw, []byte("\n"))
	fields := headers{}
	parseFields(decodeUTF8(text), fields)
	r := &record{}
	r.warcType, r.hasType = fields.get("WARC-Type")
	r.recordID, _ = fields.get("WARC-Record-ID")
	r.targetURI, r.hasTarget = fields.get("WARC-Target-URI")
	r.refersToURI, _ = fields.get("WARC-Refers-To-Target-URI")
	r.date, _ = fields.get("WARC-Date")
	r.payloadDig, r.hasPayload = fields.get("WARC-Payload-Digest")
	r.contentType, r.hasCType = fields.get("Content-Type")
	cl := wr.Header.ContentLength
	parseHTTP := r.warcType == "response" || r.warcType == "request" || (r.warcType == "revisit" && cl > 0)
	if !parseHTTP || cl == 0 {
		return r, 0, nil
	}
	block.Reset(wr.Block)
	// The scanner checks that recordEnd follows the block when the record
	// is finished; a record where it does not fails the index anyway.
	after := strings.NewReader(recordEnd)
	var err error
	r.http, err = parseHead(block, after)
	if err != nil {
		return nil, 0, fmt.Errorf("reading http header: %w", err)
	}
	if r.warcType == "request" && r.http != nil && r.http.method() != "GET" {
		r.body, err = io.ReadAll(io.LimitReader(block, maxRequestBody))
		if err != nil {
			return nil, 0, fmt.Errorf("reading request body: %w", err)
		}
	}
	return r, len(recordEnd) - after.Len(), nil
}
