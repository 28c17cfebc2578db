package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/writer"
)

// warcprox's methods for writing a record that is not a fetch (a
// screenshot, crawl metadata): the request's body becomes the block, its
// URI the WARC-Target-URI, its Content-Type and WARC-Type headers those of
// the record. PUTMETA is the deprecated form with WARC-Type metadata.
const (
	methodWriteRecord = "WARCPROX_WRITE_RECORD"
	methodPutMeta     = "PUTMETA"
)

func (s *Server) writeRecord(w http.ResponseWriter, r *http.Request, uri string) {
	start := time.Now()
	warcType := r.Header.Get("WARC-Type")
	if r.Method == methodPutMeta {
		warcType = "metadata"
	}
	contentType := r.Header.Get("Content-Type")
	if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
		textError(w, http.StatusBadRequest, "warcproxy: "+methodWriteRecord+" needs an absolute URI with a scheme (e.g. screenshot:https://...), got "+strconv.Quote(uri))
		return
	}
	if warcType == "" || contentType == "" || r.ContentLength < 0 || r.Header.Get("Content-Length") == "" {
		textError(w, http.StatusBadRequest, "warcproxy: WARC-Type, Content-Length and Content-Type request headers are required for "+methodWriteRecord)
		return
	}
	// Subject to limits and blocks, and counted in stats, like a fetch
	// (warcprox).
	pol, prefix, ok := s.warcproxMeta(w, r, uri)
	if !ok {
		return
	}
	meta, method := pol.meta, r.Method
	logLine := func(length, size int64, digest, file string, offset int64) {
		if s.opts.CrawlLog == nil {
			return
		}
		e := crawllog.Entry{
			Status: http.StatusNoContent, ContentLength: length, ContentSize: size, URL: uri,
			MIMEType: mimeTypeOf(contentType), FetchStart: start, FetchDuration: time.Since(start),
			PayloadDigest: digest, Method: method, WARCFilename: file, WARCOffset: offset,
		}
		withMeta(&e, meta)
		s.logCrawl(e)
	}
	if prefix == "-" {
		n, _ := io.Copy(io.Discard, r.Body)
		s.count(notArchived)
		s.tally(pol.statsBuckets, stats.NotWritten, n).Written()
		logLine(0, n, "", "", 0) // as warcprox: nothing recorded, so no payload
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rec := newRecorder(s.opts.Spooler, s.opts.Digest)
	fail := func(status int, msg string) {
		rec.close()
		s.count(failed)
		textError(w, status, "warcproxy: "+msg)
	}
	var body io.Reader = r.Body
	if s.opts.SocketTimeout > 0 {
		// A stalled body must not hold the connection and its slot.
		body = &clientBodyReader{r: r.Body, rc: http.NewResponseController(w), timeout: s.opts.SocketTimeout}
	}
	n, err := io.Copy(rec, body)
	if err == nil && n != r.ContentLength {
		err = fmt.Errorf("body has %d bytes, Content-Length says %d", n, r.ContentLength)
	}
	if err == nil && rec.err != nil {
		// Our side failed (spool disk full?), not the client.
		s.logger.Error("record not archived", "url", uri, "err", rec.err)
		fail(http.StatusInternalServerError, "spooling the record's body: "+rec.err.Error())
		return
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			fail(http.StatusRequestTimeout, "the record's body stalled: "+err.Error())
			return
		}
		fail(http.StatusBadRequest, "reading the record's body: "+err.Error())
		return
	}
	blockDigest := s.opts.Digest.Format(rec.h.Sum(nil), s.opts.Base32)
	var fields []writer.Field
	if !strings.HasPrefix(strings.ToLower(contentType), "application/http") {
		// No HTTP message in the block: the payload is the whole block,
		// and warcprox says so (CDX indexers read this digest).
		fields = []writer.Field{{Name: "WARC-Payload-Digest", Value: blockDigest}}
	}
	tally := s.tally(pol.statsBuckets, stats.New, n)
	capture := &writer.Capture{
		Prefix: prefix,
		Records: []writer.Record{{
			Type: warcType, Date: start, TargetURI: uri, ContentType: contentType,
			Fields: fields, Block: rec.buf, BlockLength: n, BlockDigest: blockDigest,
		}},
	}
	capture.Done = func(err error) {
		rec.close()
		if err != nil {
			tally.Cancel()
			return
		}
		tally.Written()
		logLine(n, n, blockDigest, filepath.Base(capture.File), capture.Offset)
	}
	if err := s.opts.Queue.Enqueue(context.Background(), capture); err != nil {
		tally.Cancel()
		if !errors.Is(err, writer.ErrClosed) {
			// The writer refused the record itself (a WARC-Type that is
			// not a token, a URI with control characters).
			fail(http.StatusBadRequest, err.Error())
			return
		}
		s.logger.Error("record not archived", "url", uri, "type", warcType, "err", err)
		fail(http.StatusServiceUnavailable, "the record was not queued: "+err.Error())
		return
	}
	s.count(archived)
	w.WriteHeader(http.StatusNoContent)
}
