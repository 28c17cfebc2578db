package capture

import (
	"context"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/writer"
)

// Submit hands a fetched exchange to the writer: as a response, as a
// revisit of an earlier capture of the same payload, or not at all
// (--prefix -, --method-filter, mime-type-filters, --blackout-period). It
// counts the capture in its stats buckets at once, so that the next limit
// check sees it; the rest happens once it is written (see pending). The
// stage owns ex from here on.
func (s *Stage) Submit(ex *Exchange) {
	s.finish(ex)
	archive := ex.archive && !s.mimeFiltered(ex.Meta, ex.ContentType, ex.HasContentType)
	p := &pending{s: s, ex: ex, dedupable: archive && s.shouldDedup(ex)}
	if p.dedupable {
		archive = s.lookup(p)
	}
	if !archive {
		ex.archive = false
		s.notArchived(ex)
		return
	}
	if !s.enqueue(p) {
		ex.archive = false
		ex.release()
		s.active.remove(&ex.active)
	}
}

// finish completes what the front end handed over: where the response
// record ends, its media type and its payload digest.
func (s *Stage) finish(ex *Exchange) {
	ex.settled = true
	ex.end = time.Now()
	if ex.BrokenFraming && ex.Response != nil {
		// Readers de-chunk a record, and bytes that are not chunked
		// framing would make the whole record unreadable to them: it ends
		// after the last whole chunk, and its payload digest is over the
		// data of the chunks kept.
		ex.Payload.Release()
		ex.ResEnd, ex.Payload.H = ex.Response.RecutChunked(ex.HeadEnd, ex.ResEnd)
	}
	if ex.HasContentType {
		ex.mimeType = mimeTypeOf(ex.ContentType)
	}
	if ex.Payload.H != nil {
		ex.payloadDigest = s.opts.Digest.Format(ex.Payload.H.Sum(nil), s.opts.Base32)
	}
}

// lookup asks the dedup stores for an original of the payload; it reports
// whether the capture is still to be written (not in --blackout-period).
func (s *Stage) lookup(p *pending) bool {
	ex := p.ex
	p.lookupIn, p.saveTo = dedupBuckets(ex.Meta)
	// Not the request's context: the capture is written even if the
	// client has left. The client waits for the lookup (its connection is
	// not free for the next request until then): the stores bound it
	// (the index by --store-timeout, with a reused timer; the CDX client
	// by its own timeout).
	e, _, err := s.opts.Dedup.LookupURI(context.Background(), ex.payloadDigest, ex.TargetURI, p.lookupIn)
	switch {
	case err != nil:
		s.dedupErrors.Add(1)
		if s.dedupErrLog.Allow() {
			s.logger.Error("dedup lookup failed: writing the full response", "url", ex.TargetURI, "err", err)
		}
	case e != nil && s.inBlackout(e, ex.TargetURI):
		return false
	case e != nil:
		p.original = e
	}
	return true
}

// storeContext bounds a limits check, made while a client waits
// (--store-timeout).
func (s *Stage) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.opts.StoreTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.opts.StoreTimeout)
}

// notArchived counts and logs an exchange that is not written.
func (s *Stage) notArchived(ex *Exchange) {
	s.count(notArchived)
	s.tally(ex.statsBuckets, stats.NotWritten, ex.ResEnd-ex.ResStart).Written()
	s.logCrawl(s.crawlEntry(ex, nil, false))
	ex.release()
	s.active.remove(&ex.active)
}

// enqueue builds the capture's records and queues them; it reports
// whether the writer took them.
func (s *Stage) enqueue(p *pending) bool {
	ex := p.ex
	c, err := s.records(ex, p.original)
	if err != nil {
		s.count(failed)
		// At most a line a second: a full disk fails every capture.
		if s.failedLog.Allow() {
			s.logger.Error("capture not archived", "url", ex.TargetURI, "err", err,
				"captures_failed_total", s.outcomes[failed].Load())
		}
		return false
	}
	outcome, result := stats.New, archived
	if p.original != nil {
		outcome, result = stats.Revisit, revisit
	}
	p.capture = c
	p.tally = s.tally(ex.statsBuckets, outcome, ex.ResEnd-ex.ResStart)
	c.Done = p.written
	ex.responseID = c.Records[0].ID // read before the writer has the capture
	// Wait for room however long it takes (back-pressure), even during a
	// forced shutdown: what was read is still written, marked truncated.
	// Only a pool that is closed refuses.
	if err := s.opts.Queue.Enqueue(context.Background(), c); err != nil {
		p.tally.Cancel()
		ex.responseID = ""
		s.count(failed)
		s.logger.Error("capture not archived: writer queue refused it", "url", ex.TargetURI, "err", err)
		return false
	}
	s.count(result)
	return true
}

// pending is a capture in the writer queue, with what its written step
// needs.
type pending struct {
	s         *Stage
	ex        *Exchange
	capture   *writer.Capture
	tally     *stats.Tally // nil without stats
	dedupable bool
	original  *dedup.Entry // set when written as a revisit
	lookupIn  []string
	saveTo    []string
}

// written is the writer's Done: once the records are on disk, the payload
// is saved for dedup (so a revisit never points at a record that is not
// there), the stats increments are made durable and the crawl log names
// the file and offset.
func (p *pending) written(err error) {
	s, ex := p.s, p.ex
	// Last, so that once nothing is active every dedup save and stats
	// increment of the written captures has been made (seconds_behind).
	defer s.active.remove(&ex.active)
	defer ex.release()
	if err != nil {
		p.tally.Cancel()
		return
	}
	p.tally.Written()
	s.metrics.captured(ex.Start)
	if p.dedupable && p.original == nil && len(p.saveTo) > 0 {
		r := &p.capture.Records[0]
		s.opts.Dedup.Save(ex.payloadDigest, p.saveTo, dedup.Entry{ID: r.ID, URL: r.TargetURI, Date: s.warcDate(r.Date)})
	}
	s.logCrawl(s.crawlEntry(ex, p.capture, p.original != nil))
}

// tally counts a capture in its stats buckets; nil without stats (a nil
// *stats.Tally's Written and Cancel do nothing).
func (s *Stage) tally(buckets []string, o stats.Outcome, wire int64) *stats.Tally {
	if s.opts.Stats == nil {
		return nil
	}
	return s.opts.Stats.Tally(buckets, o, wire)
}
