package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/wire"
	"github.com/warcproxy/warcproxy/writer"
)

// Record is a record that is not a fetch, written because a client asked
// for it (warcprox's WARCPROX_WRITE_RECORD and PUTMETA): a screenshot,
// crawl metadata. Its body is the block.
type Record struct {
	Start       time.Time
	URI         string // WARC-Target-URI, any scheme (screenshot:https://...)
	Method      string // for the crawl log
	WARCType    string
	ContentType string
	Length      int64 // the body's Content-Length
	Meta        *warcproxmeta.Meta
	Prefix      string // "-": counted and logged, not written
}

// Why WriteRecord did not write a record; any other error is the writer
// refusing the record itself (a WARC-Type that is not a token...).
var (
	ErrBody      = errors.New("reading the record's body") // the client's fault
	ErrSpool     = errors.New("spooling the record's body")
	ErrNotQueued = errors.New("the record was not queued") // the writer is closed
)

// WriteRecord reads a record's body and queues it for the writer; it
// counts it in the stats like a fetch (as warcprox does) and, once it is
// written, logs it in the crawl log.
func (s *Stage) WriteRecord(r *Record, body io.Reader) error {
	var buckets []string
	if s.opts.Stats != nil {
		buckets = stats.Buckets(r.URI, r.Meta)
	}
	if r.Prefix == "-" {
		n, _ := io.Copy(io.Discard, body)
		s.count(notArchived)
		s.tally(buckets, stats.NotWritten, n).Written()
		s.logRecord(r, 0, n, "", nil) // as warcprox: nothing recorded, so no payload
		return nil
	}
	rec, err := s.spoolRecord(r, body)
	if err != nil {
		s.count(failed)
		return err
	}
	blockDigest := rec.Digest(s.opts.Digest, s.opts.Base32)
	p := &pendingRecord{s: s, r: r, rec: rec, digest: blockDigest}
	p.capture = &writer.Capture{
		Prefix: r.Prefix,
		Records: []writer.Record{{
			Type: r.WARCType, Date: r.Start, TargetURI: r.URI, ContentType: r.ContentType,
			Fields: payloadField(r.ContentType, blockDigest), Block: rec.Buffer(),
			BlockLength: r.Length, BlockDigest: blockDigest,
		}},
		Done: p.written,
	}
	p.tally = s.tally(buckets, stats.New, r.Length)
	if err := s.opts.Queue.Enqueue(context.Background(), p.capture); err != nil {
		p.tally.Cancel()
		rec.Close()
		s.count(failed)
		if !errors.Is(err, writer.ErrClosed) {
			return err
		}
		s.logger.Error("record not archived", "url", r.URI, "type", r.WARCType, "err", err)
		return fmt.Errorf("%w: %w", ErrNotQueued, err)
	}
	s.count(archived)
	return nil
}

// spoolRecord reads the body, which must be exactly r.Length bytes.
func (s *Stage) spoolRecord(r *Record, body io.Reader) (*wire.Recorder, error) {
	rec := wire.NewRecorder(s.opts.Spooler, s.opts.Digest, s.opts.HashLanes)
	n, err := io.Copy(rec, body)
	if err == nil && n != r.Length {
		err = fmt.Errorf("body has %d bytes, Content-Length says %d", n, r.Length)
	}
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrBody, err)
	case rec.Err() != nil:
		// Our side failed (spool disk full?), not the client.
		s.logger.Error("record not archived", "url", r.URI, "err", rec.Err())
		err = fmt.Errorf("%w: %w", ErrSpool, rec.Err())
	}
	if err != nil {
		rec.Close()
		return nil, err
	}
	return rec, nil
}

// payloadField is WARC-Payload-Digest for a block that holds no HTTP
// message: the payload is the whole block, and warcprox says so (CDX
// indexers read this digest).
func payloadField(contentType, blockDigest string) []writer.Field {
	if strings.HasPrefix(strings.ToLower(contentType), "application/http") {
		return nil
	}
	return []writer.Field{{Name: "WARC-Payload-Digest", Value: blockDigest}}
}

// pendingRecord is a record in the writer queue.
type pendingRecord struct {
	s       *Stage
	r       *Record
	rec     *wire.Recorder
	digest  string
	capture *writer.Capture
	tally   *stats.Tally
}

// written is the writer's Done for a record.
func (p *pendingRecord) written(err error) {
	p.rec.Close()
	if err != nil {
		p.tally.Cancel()
		return
	}
	p.tally.Written()
	p.s.logRecord(p.r, p.r.Length, p.r.Length, p.digest, p.capture)
}

// logRecord writes a record's crawl log line; c is nil when nothing was
// written.
func (s *Stage) logRecord(r *Record, length, size int64, digest string, c *writer.Capture) {
	if s.opts.CrawlLog == nil {
		return
	}
	e := crawllog.Entry{
		Status: http.StatusNoContent, ContentLength: length, ContentSize: size, URL: r.URI,
		MIMEType: mimeTypeOf(r.ContentType), FetchStart: r.Start, FetchDuration: time.Since(r.Start),
		PayloadDigest: digest, Method: r.Method,
	}
	if c != nil {
		e.WARCFilename, e.WARCOffset = filepath.Base(c.File), c.Offset
	}
	withMeta(&e, r.Meta)
	s.logCrawl(e)
}
