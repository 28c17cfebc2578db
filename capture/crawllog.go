package capture

import (
	"errors"
	"net"
	"path/filepath"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// crawlEntry is the crawl log line of an exchange; c is nil when nothing
// was written.
func (s *Stage) crawlEntry(ex *Exchange, c *writer.Capture, revisit bool) crawllog.Entry {
	e := crawllog.Entry{
		Status: ex.Status,
		// As warcprox: the body as it came over the wire, chunk framing
		// included.
		ContentLength: ex.ResEnd - ex.HeadEnd,
		URL:           ex.TargetURI,
		Referer:       ex.Referer,
		MIMEType:      ex.mimeType,
		FetchStart:    ex.Start,
		FetchDuration: ex.end.Sub(ex.Start),
		Revisit:       revisit,
		ContentSize:   ex.ResEnd - ex.ResStart,
		Method:        ex.Method,
		PayloadDigest: ex.payloadDigest, // "" when not hashed
	}
	withMeta(&e, ex.Meta)
	if c != nil {
		e.WARCFilename = filepath.Base(c.File)
		e.WARCOffset = c.Offset
	}
	return e
}

func (s *Stage) logCrawl(e crawllog.Entry) {
	if s.opts.CrawlLog == nil {
		return
	}
	if err := s.opts.CrawlLog.Log(e); err != nil {
		if s.crawlLogErr.Allow() {
			s.logger.Error("writing the crawl log", "url", e.URL, "err", err)
		}
	}
}

// Failure kinds of a fetch that got no response, as the front end
// classifies them (also the kind label of warcproxy_upstream_errors_total).
const (
	FailDNS     = "dns"
	FailTimeout = "timeout"
	FailRefused = "refused"
)

// FetchFailed writes the crawl log line of a fetch that got no response,
// with Heritrix's negative status as warcprox chooses it from the failure
// kind and err: -6 DNS, -2 connection failed or timed out, -404 other.
// The exchange still has to be ended (Abandon).
func (s *Stage) FetchFailed(ex *Exchange, kind string, err error) {
	if s.opts.CrawlLog == nil {
		return
	}
	status := -404
	var opErr *net.OpError
	switch {
	case kind == FailDNS:
		status = -6
	case kind == FailTimeout || kind == FailRefused, errors.As(err, &opErr) && opErr.Op == "dial":
		status = -2
	}
	// As warcprox: no fetch time (the fetch never happened), and the
	// error's text as the exception.
	e := crawllog.Entry{Status: status, URL: ex.TargetURI, Referer: ex.Referer, Method: ex.Method, Exception: err.Error()}
	withMeta(&e, ex.Meta)
	s.logCrawl(e)
}

// withMeta fills in what a crawl log line takes from Warcprox-Meta: the
// metadata (seed, hop path) and the file prefix (warc-prefix, as warcprox
// names the crawl log files; "crawl" when there is none).
func withMeta(e *crawllog.Entry, meta *warcproxmeta.Meta) {
	if meta == nil {
		return
	}
	e.Metadata = meta.Metadata
	if meta.WarcPrefix != nil {
		e.Prefix = *meta.WarcPrefix
	}
}
