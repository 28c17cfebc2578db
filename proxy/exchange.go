package proxy

import (
	"bytes"
	"fmt"
	"hash"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// recorder receives the bytes of one direction of an exchange: it spools
// them and hashes them as they pass, so the block digest is ready when the
// exchange ends.
type recorder struct {
	buf *spool.Buffer
	h   hash.Hash
	err error
}

func newRecorder(s *spool.Spooler, alg digest.Algorithm) *recorder {
	return &recorder{buf: s.NewBuffer(), h: alg.New()}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.err == nil {
		if _, err := r.buf.Write(p); err != nil {
			r.err = err
		}
	}
	r.h.Write(p)
	return len(p), nil
}

func (r *recorder) close() {
	if r != nil {
		r.buf.Close()
	}
}

// digestRange hashes [off, off+n) of the spool; used when the block is not
// the whole recording (interim 1xx responses before it, bytes after it).
func (r *recorder) digestRange(alg digest.Algorithm, b32 bool, off, n int64) (string, error) {
	if off == 0 && n == r.buf.Len() {
		return alg.Format(r.h.Sum(nil), b32), nil
	}
	h := alg.New()
	buf := getBuf()
	defer putBuf(buf)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r.buf, off, n), *buf); err != nil {
		return "", err
	}
	return alg.Format(h.Sum(nil), b32), nil
}

// payloadReader hashes the transfer-decoded body as the client is sent it.
type payloadReader struct {
	r io.Reader
	h hash.Hash // nil when not recording
	n int64
}

func (p *payloadReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.n += int64(n)
		if p.h != nil {
			p.h.Write(b[:n])
		}
	}
	return n, err
}

// WARC-Truncated reasons.
const (
	truncLength     = "length"
	truncTime       = "time"
	truncDisconnect = "disconnect"
)

// exchange is one request/response pair on its way to the WARC writer.
type exchange struct {
	start     time.Time
	targetURI string
	ip        string
	req, res  *recorder // nil when the exchange is not archived
	resStart  int64
	resEnd    int64
	payload   payloadReader
	truncated string
	prefix    string // WARC prefix (the default or Warcprox-Meta's warc-prefix)

	headEnd        int64 // end of the final response head in res (revisit blocks end here)
	brokenFraming  bool  // the chunked body broke off with bad framing
	end            time.Time
	method         string
	referer        string
	status         int
	contentType    string // the response's first Content-Type header
	hasContentType bool
	mimeType       string // its media type, lower case
	payloadDigest  string
	meta           *warcproxmeta.Meta
	statsBuckets   []string
	active         activeNode // in Server.activeSet until written
}

func (ex *exchange) discard() {
	ex.req.close()
	ex.res.close()
}

// capture turns a finished exchange into the writer's records: response,
// then request, linked by WARC-Concurrent-To.
func (ex *exchange) capture(prefix string, alg digest.Algorithm, b32 bool) (*writer.Capture, error) {
	if ex.res.err != nil {
		return nil, fmt.Errorf("spooling response: %w", ex.res.err)
	}
	if ex.req.err != nil {
		return nil, fmt.Errorf("spooling request: %w", ex.req.err)
	}
	resLen := ex.resEnd - ex.resStart
	resDigest, err := ex.res.digestRange(alg, b32, ex.resStart, resLen)
	if err != nil {
		return nil, fmt.Errorf("digesting response: %w", err)
	}
	resID := newRecordID()
	resFields := []writer.Field{{Name: "WARC-IP-Address", Value: ex.ip}}
	if ex.payloadDigest != "" {
		resFields = append(resFields, writer.Field{Name: "WARC-Payload-Digest", Value: ex.payloadDigest})
	}
	if ex.truncated != "" {
		resFields = append(resFields, writer.Field{Name: "WARC-Truncated", Value: ex.truncated})
	}
	req, res := ex.req, ex.res
	return &writer.Capture{
		Prefix: prefix,
		Records: []writer.Record{
			{
				Type: "response", ID: resID, Date: ex.start, TargetURI: ex.targetURI,
				ContentType: "application/http; msgtype=response",
				Fields:      resFields,
				Block:       res.buf, BlockOffset: ex.resStart, BlockLength: resLen,
				BlockDigest: resDigest,
			},
			{
				Type: "request", Date: ex.start, TargetURI: ex.targetURI,
				ContentType: "application/http; msgtype=request",
				Fields: []writer.Field{
					{Name: "WARC-Concurrent-To", Value: resID},
					{Name: "WARC-IP-Address", Value: ex.ip},
				},
				Block: req.buf, BlockLength: req.buf.Len(),
				BlockDigest: alg.Format(req.h.Sum(nil), b32),
			},
		},
		Done: func(error) { req.close(); res.close() },
	}, nil
}

func newRecordID() string {
	return "<urn:uuid:" + uuid.NewString() + ">"
}

// hopByHop are the headers a proxy does not forward (RFC 9110 7.6.1), plus
// the framing headers this proxy sets itself.
var hopByHop = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
}

// inConnection reports whether name is listed in the Connection header
// values (which makes it hop-by-hop too). It allocates nothing: it runs
// for every header of every request and response.
func inConnection(connection []string, name string) bool {
	for _, v := range connection {
		for v != "" {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(tok), name) {
				return true
			}
		}
	}
	return false
}

// proxyOnly are request headers meant for the proxy, never forwarded:
// warcprox's control header (acted on in a later version; until then it is
// at least not leaked to sites and into request records).
var proxyOnly = map[string]bool{"Warcprox-Meta": true}

// isUpgrade reports whether the client asks to switch protocols (WebSocket).
// h2c is not passed on: the origin would answer in HTTP/2 on the spliced
// connection, which is not recorded.
func isUpgrade(h http.Header) bool {
	u := h.Get("Upgrade")
	return u != "" && inConnection(h["Connection"], "Upgrade") && !strings.Contains(strings.ToLower(u), "h2c")
}

// requestHead serializes the request line and headers sent upstream.
// host is the Host header to send (the client's, or the target's when an
// HTTP/1.0 client sent none).
func requestHead(b []byte, r *http.Request, host, requestURI string, upgrade bool, hasBody bool) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, requestURI...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	conn := r.Header["Connection"]
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		if hopByHop[k] || proxyOnly[k] || k == "Host" || k == "Content-Length" || inConnection(conn, k) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			b = appendField(b, k, v)
		}
	}
	if upgrade {
		b = appendField(b, "Connection", "Upgrade")
		for _, v := range r.Header["Upgrade"] {
			b = appendField(b, "Upgrade", v)
		}
	}
	if hasBody {
		if r.ContentLength >= 0 {
			b = appendField(b, "Content-Length", strconv.FormatInt(r.ContentLength, 10))
		} else {
			b = appendField(b, "Transfer-Encoding", "chunked")
		}
	} else if r.ContentLength == 0 && (r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch) {
		b = appendField(b, "Content-Length", "0")
	}
	return append(b, "\r\n"...)
}

func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	b = append(b, v...)
	return append(b, "\r\n"...)
}

// notForClient are response headers kept in the record but not passed to
// the client. Strict-Transport-Security, as warcprox: a browser that kept it
// would upgrade the site's http:// links itself, so they would never be
// fetched (and archived) as http://. Warcprox-Meta: only the proxy speaks
// it to the crawler; a site that sent its own (say a 420 with
// "reached-limit") could otherwise make a crawler such as Brozzler end its
// crawl. warcprox passes the origin's copy on; this is stricter.
var notForClient = map[string]bool{"Strict-Transport-Security": true, "Warcprox-Meta": true}

// copyResponseHeaders copies the origin's headers for the client, without
// hop-by-hop ones; Content-Length is set by the caller.
func copyResponseHeaders(dst, src http.Header) {
	conn := src["Connection"]
	for k, vv := range src {
		if hopByHop[k] || notForClient[k] || k == "Content-Length" || inConnection(conn, k) {
			continue
		}
		dst[k] = vv
	}
}

// clientBodyReader reads a request body from the client with an inactivity
// timeout, re-armed as the body arrives (not on every read: see
// inactivity).
type clientBodyReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	armed   inactivity
}

func (b *clientBodyReader) Read(p []byte) (int, error) {
	if at, ok := b.armed.due(b.timeout); ok {
		_ = b.rc.SetReadDeadline(at)
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		// The body is in: lift the deadline, so that it cannot pass for
		// the client going away while the response streams (net/http's
		// background read lifts it too, today).
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// recutChunked ends the response record after the last whole chunk of a
// chunked body whose framing broke, and recomputes the payload digest over
// the data of the chunks kept: readers de-chunk a record, and bytes that are
// not chunked framing would make the whole record unreadable to them.
func (ex *exchange) recutChunked(alg digest.Algorithm) {
	if ex.res == nil || ex.res.buf == nil {
		return
	}
	h := alg.New()
	end := ex.headEnd
	pos := ex.headEnd
	r := io.NewSectionReader(ex.res.buf, 0, ex.resEnd)
	for pos < ex.resEnd {
		line, ok := readLineAt(r, pos, ex.resEnd)
		if !ok {
			break
		}
		sizeField, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
		size, err := strconv.ParseInt(strings.TrimSpace(sizeField), 16, 64)
		if err != nil || size < 0 || size == 0 {
			break
		}
		dataStart := pos + int64(len(line))
		dataEnd := dataStart + size
		if dataEnd+2 > ex.resEnd {
			break
		}
		var crlf [2]byte
		if _, err := r.ReadAt(crlf[:], dataEnd); err != nil || string(crlf[:]) != "\r\n" {
			break
		}
		if _, err := io.Copy(h, io.NewSectionReader(r, dataStart, size)); err != nil {
			break
		}
		pos = dataEnd + 2
		end = pos
	}
	ex.resEnd = end
	ex.payload.h = h
}

// readLineAt reads one line (through "\n", at most 4 KiB) starting at off.
func readLineAt(r io.ReaderAt, off, limit int64) (string, bool) {
	var buf [4096]byte
	n, _ := r.ReadAt(buf[:min(int64(len(buf)), limit-off)], off)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		return string(buf[:i+1]), true
	}
	return "", false
}
