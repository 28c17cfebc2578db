// Package cdxj writes CDXJ indexes of WARC files, the format pywb and
// ReplayWeb.page read, so that a closed WARC can be replayed without
// reindexing it.
//
// The index is the one warcio.js's `warcio cdx-index` writes (webrecorder's
// JavaScript indexer), line for line once both are sorted: the same records,
// the same urlkey (see SURT), the same JSON fields in the same order and
// the same values, including where warcio.js differs from pywb's Python
// cdx-indexer (see IndexFile).
package cdxj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// IndexFile reads the closed WARC file at path (.warc.gz with one record
// per gzip member, .warc.zst with one record per zstd frame, or .warc) and
// writes its CDXJ index to out, sorted in byte order (LC_ALL=C sort) as
// pywb expects.
//
// There is one line per record except request and warcinfo records, and
// resource and metadata records whose Content-Type is
// application/warc-fields: "URLKEY TIMESTAMP {json}". The JSON object holds
// url, mime, status, digest, length, offset and filename, in that order,
// each a string, and a key is left out when the record has no value for
// it:
//
//   - mime is the HTTP Content-Type without parameters for a response,
//     "warc/revisit" for a revisit, and the record's own Content-Type
//     (parameters included) for other types;
//   - status is the number in the HTTP status line of a response or a
//     revisit that has an HTTP head;
//   - digest is WARC-Payload-Digest after "sha1:" (or any algorithm);
//   - offset and length are the record's gzip member in a .warc.gz file,
//     its zstd frame in a .warc.zst file (a reader of that range alone
//     needs the file's dictionary too, if it starts with one: the
//     WARC-zstd spec's random access);
//     in a .warc file length runs from the record's first byte to the end
//     of its block, without the CRLFCRLF that ends it (pywb counts it);
//   - filename is the file's base name.
//
// A response or revisit next to its request record (same WARC-Target-URI)
// whose method is not GET also gets "method" and, except when empty,
// "requestBody": the body as a query (form fields, JSON flattened, or
// "__wb_post_data=" and base64), which is appended to the URL the urlkey
// is made from ("?__wb_method=POST&a=1"), as pywb does to replay POSTs.
//
// Where warcio.js has quirks, they are copied: a WARC or HTTP header value
// with a character above U+00FF is taken as its UTF-8 bytes one character
// each (so an IRI's url and urlkey come out as mojibake); an HTTP head
// without header fields runs on to the next CRLFCRLF (into the body, or
// the record's end, which then counts in a .warc length); status is
// String(Number(code)) ("NaN" for a non-number); the urlkey of a record
// without WARC-Target-URI is "undefined".
//
// The file must hold whole records as warcproxy writes them (the grammar
// of internal/warcscan, which crash recovery also cuts files back to: in
// a .warc.gz file one record per gzip member, in a .warc.zst file one per
// zstd frame); anything else, where
// warcio.js might still index something, is an error. The compression is
// told by the file's first bytes, not its name.
//
// The file is read as a stream: memory grows with the number of index
// lines (they are sorted at the end), not with the size of the file or its
// records.
func IndexFile(path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening warc file: %w", err)
	}
	defer func() { _ = f.Close() }()
	var lines [][]byte
	err = Walk(f, filepath.Base(path), Visitor{Line: func(l []byte) error {
		lines = append(lines, l)
		return nil
	}})
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	slices.SortFunc(lines, bytes.Compare)
	bw := bufio.NewWriter(out)
	for _, l := range lines {
		if _, err := bw.Write(l); err != nil {
			return fmt.Errorf("writing index: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing index: %w", err)
	}
	return nil
}

// WriteBeside indexes the WARC file at path into the file beside it,
// NAME.warc.gz, NAME.warc.zst or NAME.warc to NAME.cdxj, through a
// temporary name that is renamed when complete, and returns the index's
// path.
func WriteBeside(path string) (string, error) {
	dst, err := BesidePath(path)
	if err != nil {
		return "", err
	}
	base := strings.TrimSuffix(dst, ".cdxj")
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(base)+".cdxj.*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating index file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	err = IndexFile(path, tmp)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("indexing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("renaming index file: %w", err)
	}
	return dst, nil
}

// BesidePath is where WriteBeside writes the index of the WARC file at
// path: NAME.warc.gz, NAME.warc.zst or NAME.warc to NAME.cdxj.
func BesidePath(path string) (string, error) {
	c := warcscan.ForName(path)
	if c == nil {
		return "", fmt.Errorf("indexing %s: %w", path, ErrNotWARC)
	}
	return strings.TrimSuffix(path, ".warc"+c.Ext()) + ".cdxj", nil
}

// ErrNotWARC is returned by WriteBeside for a path not ending in .warc,
// .warc.gz or .warc.zst.
var ErrNotWARC = errors.New("not a .warc, .warc.gz or .warc.zst file")

// indexer pairs records as warcio.js's CDXIndexer does and hands each
// index line to out.
type indexer struct {
	filename string
	last     *record
	out      func(line []byte)
}

// add takes the next record, or nil at the end of the file.
func (ix *indexer) add(r *record) {
	last := ix.last
	ix.last = r
	if last == nil {
		return
	}
	if r == nil || !sameTarget(last, r) {
		ix.emit(last, nil)
		return
	}
	isResp := func(t string) bool { return t == "response" || t == "revisit" }
	switch {
	case r.warcType == "request" && isResp(last.warcType):
		ix.last = nil
		ix.emit(last, r)
	case isResp(r.warcType) && last.warcType == "request":
		ix.last = nil
		ix.emit(r, last)
	default:
		ix.emit(last, nil)
	}
}

func sameTarget(a, b *record) bool {
	return a.hasTarget == b.hasTarget && a.targetURI == b.targetURI
}

// indexed reports whether warcio.js's default filter keeps r.
func indexed(r *record) bool {
	switch r.warcType {
	case "request", "warcinfo":
		return false
	case "metadata", "resource":
		return !r.hasCType || r.contentType != "application/warc-fields"
	}
	return true
}

func (ix *indexer) emit(r, req *record) {
	if !indexed(r) {
		return
	}
	keyURL := r.targetURI
	var method, requestBody string
	if req != nil && req.http != nil && req.http.method() != "GET" {
		method = req.http.method()
		ct, _ := req.http.fields.get("content-type")
		requestBody, keyURL = postQuery(keyURL, method, ct, req.body)
	}
	urlkey := "undefined" // what warcio.js writes for a record without a URL
	if keyURL != "" {
		urlkey = SURT(keyURL)
	}
	ts := dateDigits.Replace(r.date)
	if len(ts) > 14 {
		ts = ts[:14]
	}

	fields := make([]jsonField, 0, 9)
	if r.hasTarget {
		fields = append(fields, jsonField{"url", r.targetURI})
	}
	if mime, ok := mimeOf(r); ok {
		fields = append(fields, jsonField{"mime", mime})
	}
	if (r.warcType == "response" || r.warcType == "revisit") && r.http != nil {
		fields = append(fields, jsonField{"status", r.http.status()})
	}
	if r.hasPayload {
		if _, d, ok := strings.Cut(r.payloadDig, ":"); ok {
			d, _, _ = strings.Cut(d, ":") // split(":", 2)[1]
			fields = append(fields, jsonField{"digest", d})
		}
	}
	fields = append(fields,
		jsonField{"length", strconv.FormatInt(r.length, 10)},
		jsonField{"offset", strconv.FormatInt(r.offset, 10)},
		jsonField{"filename", ix.filename})
	if method != "" {
		fields = append(fields, jsonField{"method", method})
	}
	if requestBody != "" {
		fields = append(fields, jsonField{"requestBody", requestBody})
	}

	line := make([]byte, 0, 256)
	line = append(line, urlkey...)
	line = append(line, ' ')
	line = append(line, ts...)
	line = append(line, ' ')
	line = appendJSONObject(line, fields)
	line = append(line, '\n')
	ix.out(line)
}

// dateDigits turns a WARC-Date into the CDX timestamp, as warcio.js does
// (before cutting it to 14 characters).
var dateDigits = strings.NewReplacer("-", "", ":", "", "T", "")

// mimeOf is warcio.js's mime field.
func mimeOf(r *record) (string, bool) {
	switch r.warcType {
	case "revisit":
		return "warc/revisit", true
	case "response", "request":
		if r.http == nil {
			return "", false
		}
		ct, ok := r.http.fields.get("content-type")
		if !ok {
			return "", false
		}
		mt, _, _ := strings.Cut(ct, ";")
		return jsTrim(mt), true
	}
	return r.contentType, r.hasCType
}
