package wacz

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/warcproxy/warcproxy/cdxj"
)

// PagesFrom says which records become pages in pages/pages.jsonl.
type PagesFrom int

const (
	// PagesFromHTML lists every HTML response with status 200.
	PagesFromHTML PagesFrom = iota
	// PagesNone writes pages.jsonl with its header line only.
	PagesNone
)

// pagesHeader is the first line of pages.jsonl (WACZ 1.1.1).
const pagesHeader = `{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}` + "\n"

// Bounds of the title search.
const (
	// titleScan is how much of a body (after content decoding) is searched
	// for <title>: pages with long inline scripts or styles in <head> still
	// get theirs.
	titleScan = 256 << 10
	// maxTitle caps a title's length in bytes.
	maxTitle = 2048
)

// page is one line of pages.jsonl.
type page struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"`
	Title string `json:"title,omitempty"`
}

// pageFinder picks the pages from the response records a walk hands it
// and writes their lines to w (a temporary file: their number is not
// bounded).
type pageFinder struct {
	w  *json.Encoder
	n  int64
	gz gzip.Reader   // reused for each gzip-encoded body
	br *bufio.Reader // reused for each body

	// pending holds the pages of the responses visited whose index lines,
	// which tell whether a GET fetched them, have not come yet, in file
	// order: one, or two when a response is not followed by a request.
	pending []pendingPage
}

// pendingPage is a page waiting for the index line of its record.
type pendingPage struct {
	page
	offset int64
}

func newPageFinder(w io.Writer) *pageFinder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // titles and URLs as written
	return &pageFinder{w: enc, br: bufio.NewReaderSize(nil, 4096)}
}

// visit is a cdxj.Visitor's Response: a 200 response whose Content-Type
// is text/html or application/xhtml+xml is a page (not a redirect, whose
// target is), if it answered a GET: see line. So is a revisit of such a
// response at another URL (the same page at https:// and http://, or at
// / and /index.html), which replay tools resolve through its original;
// not one at the same URL, which is listed already. A revisit has no
// body to take a title from.
func (pf *pageFinder) visit(r *cdxj.Response) error {
	if r.Status != "200" || !isHTML(r.Header("Content-Type")) {
		return nil
	}
	if r.Revisit && (r.RefersToURI == "" || r.RefersToURI == r.TargetURI) {
		return nil
	}
	date, err := time.Parse(time.RFC3339Nano, r.Date)
	if err != nil {
		return nil // no ts to list it under; replay still finds it by URL
	}
	id := sha256.Sum256([]byte(r.RecordID))
	pf.pending = append(pf.pending, pendingPage{page{
		ID:    hex.EncodeToString(id[:16]),
		URL:   r.TargetURI,
		TS:    date.UTC().Format(time.RFC3339Nano),
		Title: pf.title(r),
	}, r.Offset})
	return nil
}

// line wraps a cdxj.Visitor's Line: the index line of a response held by
// visit names the method of the request it answered, if not GET (or
// none), and only a GET's answer is a page. A HEAD's has no body, and
// POST's or PUT's is not what opening the URL shows: replay tools look a
// page up as a GET (their index keys other methods apart, with
// "__wb_method="), so such a page would not be found.
func (pf *pageFinder) line(next func([]byte) error) func([]byte) error {
	return func(l []byte) error {
		if len(pf.pending) > 0 {
			if err := pf.settle(l); err != nil {
				return err
			}
		}
		return next(l)
	}
}

// settle writes the pending pages up to l's record: lines come in the
// order of the records, so those before it had theirs, and the one at its
// offset is a page if l names no method.
func (pf *pageFinder) settle(l []byte) error {
	_, rest, _ := bytes.Cut(l, []byte(" "))
	_, js, _ := bytes.Cut(rest, []byte(" "))
	var f struct {
		Offset string `json:"offset"`
		Method string `json:"method"`
	}
	if err := json.Unmarshal(js, &f); err != nil {
		return fmt.Errorf("reading an index line: %w", err)
	}
	offset, err := strconv.ParseInt(f.Offset, 10, 64)
	if err != nil {
		return fmt.Errorf("reading an index line: offset %q", f.Offset)
	}
	for len(pf.pending) > 0 && pf.pending[0].offset <= offset {
		p := pf.pending[0]
		pf.pending = pf.pending[1:]
		if p.offset == offset && f.Method != "" {
			continue
		}
		if err := pf.w.Encode(p.page); err != nil {
			return fmt.Errorf("writing pages: %w", err)
		}
		pf.n++
	}
	return nil
}

// startFile forgets pages still held from the file before (offsets start
// over in each file); Walk ends a file with its last index line, so none
// is held.
func (pf *pageFinder) startFile() { pf.pending = pf.pending[:0] }

func isHTML(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// title is the page's <title>, entities decoded and white space collapsed,
// or "" when the first titleScan bytes of the body have none or the body
// cannot be decoded (a Content-Encoding other than gzip or deflate, such
// as br). A body that does not decode is no error: the record is still
// packed, and a damaged record fails the walk when it is finished.
func (pf *pageFinder) title(r *cdxj.Response) string {
	body := r.Body
	if strings.EqualFold(strings.TrimSpace(r.Header("Transfer-Encoding")), "chunked") {
		body = httputil.NewChunkedReader(body)
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		if err := pf.gz.Reset(body); err != nil {
			return ""
		}
		body = &pf.gz
	case "deflate":
		if body = inflater(body); body == nil {
			return ""
		}
	default:
		return ""
	}
	pf.br.Reset(io.LimitReader(body, titleScan))
	return findTitle(pf.br, r.Header("Content-Type"))
}

// inflater undoes Content-Encoding: deflate, which RFC 9110 defines as a
// zlib stream but which some servers send as raw deflate; the first two
// bytes tell which (a zlib header names method 8 and is a multiple of 31).
// nil: a zlib header that does not read.
func inflater(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	h, err := br.Peek(2)
	if err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		zr, err := zlib.NewReader(br)
		if err != nil {
			return nil
		}
		return zr
	}
	return flate.NewReader(br)
}

// findTitle reads HTML from br, in the charset its Content-Type or its
// first bytes declare (UTF-8 when neither does), and returns the text of
// the first title element outside <svg> and <math>.
func findTitle(br *bufio.Reader, contentType string) string {
	head, _ := br.Peek(1024)
	var src io.Reader = br
	if enc, name, _ := charset.DetermineEncoding(head, contentType); name != "utf-8" {
		src = enc.NewDecoder().Reader(br)
	} // UTF-8 is read as it is: the title is made valid UTF-8 at the end
	z := html.NewTokenizer(src)
	z.SetMaxBuf(titleScan)
	foreign := 0 // depth inside svg or math, whose <title> is not the page's
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			switch atom.Lookup(name) {
			case atom.Svg, atom.Math:
				foreign++
			case atom.Title:
				if foreign == 0 {
					return titleText(z)
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if a := atom.Lookup(name); (a == atom.Svg || a == atom.Math) && foreign > 0 {
				foreign--
			}
		}
	}
}

// titleText reads the text of a title element whose start tag z has just
// read.
func titleText(z *html.Tokenizer) string {
	var text strings.Builder
	for z.Next() == html.TextToken && text.Len() < titleScan {
		text.Write(z.Text()) // entities decoded by the tokenizer
	}
	t := strings.Join(strings.Fields(text.String()), " ")
	if len(t) > maxTitle {
		t = t[:maxTitle]
	}
	return strings.ToValidUTF8(t, "\uFFFD")
}
