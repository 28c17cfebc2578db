package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// Deduper finds earlier captures of a payload and remembers new ones (the
// dedup index).
type Deduper interface {
	// LookupURI finds an original of the payload digest captured at uri
	// (the URL matters to a CDX server; local stores look by digest).
	LookupURI(ctx context.Context, digest, uri string, buckets []string) (*dedup.Entry, string, error)
	Save(digest string, buckets []string, e dedup.Entry)
}

// Prefetcher is a Deduper whose lookups are slow enough (a remote CDX
// server) to start as soon as a request that will be archived arrives: the
// lookup is by URL, so its answer can be on its way while the origin
// answers.
type Prefetcher interface {
	Prefetch(uri string)
}

// StatsTracker counts captures per bucket and checks Warcprox-Meta limits
// against the counters.
type StatsTracker interface {
	CheckLimits(ctx context.Context, buckets []string, m *warcproxmeta.Meta) (*stats.Reached, error)
	Tally(buckets []string, o stats.Outcome, wireBytes int64) *stats.Tally
}

// CrawlLogger writes the crawl log.
type CrawlLogger interface {
	Log(e crawllog.Entry) error
}

// unspecifiedDedupBucket is the dedup bucket of requests that name none
// (warcprox's name in its shared backends).
const unspecifiedDedupBucket = "__unspecified__"

// defaultDedupBuckets is shared by every request naming none; read only.
var defaultDedupBuckets = []string{unspecifiedDedupBucket}

// policy is what a request's Warcprox-Meta and the options decide about it.
type policy struct {
	meta         *warcproxmeta.Meta // nil without the header
	statsBuckets []string           // nil without a stats tracker
}

func (s *Server) newPolicy(meta *warcproxmeta.Meta, uri string) policy {
	p := policy{meta: meta}
	if s.opts.Stats != nil {
		p.statsBuckets = stats.Buckets(uri, meta)
	}
	return p
}

// enforceLimits answers 420 (limits) or 430 (soft-limits) with warcprox's
// headers when a bucket the request counts in has reached one, and reports
// whether to go on.
func (s *Server) enforceLimits(ctx context.Context, w http.ResponseWriter, r *http.Request, p policy, uri string) bool {
	if p.meta == nil || s.opts.Stats == nil || (len(p.meta.Limits) == 0 && len(p.meta.SoftLimits) == 0) {
		return true
	}
	reached, err := s.opts.Stats.CheckLimits(ctx, p.statsBuckets, p.meta)
	if err != nil {
		s.logger.Error("cannot check limits: statistics unavailable", "url", uri, "err", err)
		w.Header().Set("Retry-After", "5")
		textError(w, http.StatusServiceUnavailable, "warcproxy: cannot check Warcprox-Meta limits: statistics unavailable: "+err.Error())
		return false
	}
	if reached == nil {
		return true
	}
	s.rejectLimit(w, r, reached)
	s.logger.Info("request rejected: limit reached", "url", uri, "limit", reached.Key, "value", reached.Limit.Value, "soft", reached.Soft)
	return false
}

// rejectLimit sends warcprox's answer to a request over a limit: "420
// Reached limit" or "430 Reached soft limit" (net/http cannot send those
// reason phrases, so the response is written on the hijacked connection,
// which is closed after it, as warcprox closes it), a text body, and
// Warcprox-Meta: {"stats":{BUCKET:DOC},"reached-limit":{KEY:N}}.
func (s *Server) rejectLimit(w http.ResponseWriter, r *http.Request, x *stats.Reached) {
	status, reason, field, what := 420, "Reached limit", "reached-limit", "limit"
	if x.Soft {
		status, reason, field, what = 430, "Reached soft limit", "reached-soft-limit", "soft limit"
	}
	doc, err := x.Value.Doc(x.Name).MarshalJSON()
	if err != nil {
		doc = []byte("{}")
	}
	name, _ := json.Marshal(x.Name)
	key, _ := json.Marshal(x.Key)
	meta := asciiJSON([]byte(fmt.Sprintf(`{"stats":{%s:%s},%q:{%s:%d}}`, name, doc, field, key, x.Limit.Value)))
	body := fmt.Sprintf("request rejected by warcprox: reached %s %s=%d\n", what, x.Key, x.Limit.Value)

	if hj, ok := w.(http.Hijacker); ok {
		if c, bw, err := hj.Hijack(); err == nil {
			defer c.Close()
			proto := "HTTP/1.1"
			if r.ProtoMajor == 1 && r.ProtoMinor == 0 {
				proto = "HTTP/1.0"
			}
			fmt.Fprintf(bw, "%s %d %s\r\nContent-Type: text/plain;charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n%s: %s\r\n\r\n",
				proto, status, reason, len(body), warcproxmeta.HeaderName, meta)
			if r.Method != http.MethodHead {
				_, _ = bw.WriteString(body)
			}
			_ = bw.Flush()
			return
		}
	}
	h := w.Header()
	h.Set(warcproxmeta.HeaderName, meta)
	h.Set("Content-Type", "text/plain;charset=utf-8")
	h.Set("Connection", "close")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

// mimeFiltered applies Warcprox-Meta's mime-type-filters to a response's
// Content-Type as warcprox does: a REJECT filter whose regex matches at the
// start, or a LIMIT filter whose regex does not, means not archived.
func (s *Server) mimeFiltered(meta *warcproxmeta.Meta, contentType string, has bool) bool {
	if meta == nil {
		return false
	}
	for _, f := range meta.MimeTypeFilters {
		switch f.Type {
		case "REJECT", "LIMIT":
		default:
			continue
		}
		if !has {
			if f.Type == "LIMIT" {
				return true
			}
			continue
		}
		re, err := s.filterRegexp(f.Regex)
		if err != nil {
			continue // warcprox skips a regex it cannot compile
		}
		m := re.MatchString(contentType)
		if (f.Type == "REJECT" && m) || (f.Type == "LIMIT" && !m) {
			return true
		}
	}
	return false
}

// filterRegexp compiles a mime-type filter anchored at the start, as
// Python's re.match applies it, with a small cache: crawlers send the same
// filters with every request.
func (s *Server) filterRegexp(expr string) (*regexp.Regexp, error) {
	s.reMu.Lock()
	defer s.reMu.Unlock()
	if e, ok := s.reCache[expr]; ok {
		return e.re, e.err
	}
	re, err := regexp.Compile(`^(?:` + expr + `)`)
	if len(s.reCache) >= 256 {
		clear(s.reCache)
	}
	if s.reCache == nil {
		s.reCache = make(map[string]reEntry)
	}
	s.reCache[expr] = reEntry{re, err}
	return re, err
}

type reEntry struct {
	re  *regexp.Regexp
	err error
}

// isText is warcprox's test for --dedup-min-text-size.
func isText(mimeType string) bool {
	if strings.HasPrefix(mimeType, "text/") {
		return true
	}
	switch mimeType {
	case "application/xml", "application/javascript", "application/json",
		"application/xhtml+xml", "application/typescript", "image/svg+xml":
		return true
	}
	return false
}

// mimeTypeOf is the media type of a Content-Type value, lower case, without
// parameters.
func mimeTypeOf(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	for i := 0; i < len(mt); i++ {
		if c := mt[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(mt) // allocates only for upper case
		}
	}
	return mt
}

// dedupBuckets returns the buckets to look a payload up in, in order, and
// those a new original is saved to.
func dedupBuckets(meta *warcproxmeta.Meta) (lookup, save []string) {
	if meta == nil || meta.DedupBuckets == nil {
		return defaultDedupBuckets, defaultDedupBuckets
	}
	for _, b := range meta.DedupBuckets {
		lookup = append(lookup, b.Name)
		if !b.ReadOnly {
			save = append(save, b.Name)
		}
	}
	return lookup, save
}

// shouldDedup applies --dedup-only-with-bucket and the minimum sizes.
func (s *Server) shouldDedup(ex *exchange) bool {
	if s.opts.Dedup == nil || ex.payload.h == nil || ex.truncated != "" {
		return false
	}
	if s.opts.DedupOnlyWithBucket && (ex.meta == nil || ex.meta.DedupBuckets == nil) {
		return false
	}
	min := s.opts.DedupMinBinarySize
	if isText(ex.mimeType) {
		min = s.opts.DedupMinTextSize
	}
	return ex.payload.n > min
}

// inBlackout reports whether a duplicate is too close to its original to
// be written at all (--blackout-period): same URL, original younger than
// the period.
func (s *Server) inBlackout(e *dedup.Entry, uri string) bool {
	if s.opts.BlackoutPeriod <= 0 || e.URL != uri {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, e.Date)
	if err != nil {
		return false
	}
	return time.Since(t) <= s.opts.BlackoutPeriod
}

// warcDate formats t as the writer writes WARC-Date.
func (s *Server) warcDate(t time.Time) string {
	if s.opts.WARCVersion == "1.1" {
		return t.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// revisitProfile is WARC-Profile of revisit records for the WARC version.
func (s *Server) revisitProfile() string {
	if s.opts.WARCVersion == "1.1" {
		return "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	}
	return "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
}

// crawlEntry is the crawl log line of an exchange; file is empty when
// nothing was written.
func (s *Server) crawlEntry(ex *exchange, c *writer.Capture, revisit bool) crawllog.Entry {
	e := crawllog.Entry{
		Status: ex.status,
		// As warcprox: the body as it came over the wire, chunk framing
		// included.
		ContentLength: ex.resEnd - ex.headEnd,
		URL:           ex.targetURI,
		Referer:       ex.referer,
		MIMEType:      ex.mimeType,
		FetchStart:    ex.start,
		FetchDuration: ex.end.Sub(ex.start),
		Revisit:       revisit,
		ContentSize:   ex.resEnd - ex.resStart,
		Method:        ex.method,
		PayloadDigest: ex.payloadDigest, // "" when not hashed
	}
	withMeta(&e, ex.meta)
	if c != nil {
		e.WARCFilename = filepath.Base(c.File)
		e.WARCOffset = c.Offset
	}
	return e
}

func (s *Server) logCrawl(e crawllog.Entry) {
	if s.opts.CrawlLog == nil {
		return
	}
	if err := s.opts.CrawlLog.Log(e); err != nil {
		if s.crawlLogErr.allow() {
			s.logger.Error("writing the crawl log", "url", e.URL, "err", err)
		}
	}
}

// logFailedFetch writes the crawl log line of a fetch that got no response,
// with Heritrix's negative status as warcprox chooses it, from the kind
// label classifyUpstreamError gave err.
func (s *Server) logFailedFetch(r *http.Request, uri string, meta *warcproxmeta.Meta, label string, err error) {
	if s.opts.CrawlLog == nil {
		return
	}
	status := -404
	var opErr *net.OpError
	switch {
	case label == "dns":
		status = -6
	case label == "timeout" || label == "refused", errors.As(err, &opErr) && opErr.Op == "dial":
		status = -2
	}
	// As warcprox: no fetch time (the fetch never happened), and the
	// error's text as the exception.
	e := crawllog.Entry{Status: status, URL: uri, Referer: r.Header.Get("Referer"), Method: r.Method, Exception: err.Error()}
	withMeta(&e, meta)
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

// activeSet tracks the exchanges from their first byte until their
// capture is written, for warcprox's seconds_behind and
// earliest_still_active_fetch_start. It links the exchanges themselves (no
// allocation per request); starts arrive in time order, so the oldest is at
// the front.
type activeSet struct {
	mu         sync.Mutex
	head, tail *activeNode
	n          int
}

// activeNode is an exchange's place in the activeSet.
type activeNode struct {
	start      time.Time
	prev, next *activeNode
	in         bool
}

func (a *activeSet) add(n *activeNode, start time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n.start, n.prev, n.next, n.in = start, a.tail, nil, true
	if a.tail != nil {
		a.tail.next = n
	} else {
		a.head = n
	}
	a.tail = n
	a.n++
}

// remove takes n out; removing it twice, or a node never added, is a no-op.
func (a *activeSet) remove(n *activeNode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !n.in {
		return
	}
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		a.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		a.tail = n.prev
	}
	n.prev, n.next, n.in = nil, nil, false
	a.n--
}

func (a *activeSet) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// Unwritten is the number of exchanges started and not yet written to a
// WARC file (or given up): in flight, or waiting in the writer queue.
func (s *Server) Unwritten() int { return s.activeSet.len() }

// earliest returns the oldest start still active.
func (a *activeSet) earliest() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head == nil {
		return time.Time{}, false
	}
	return a.head.start, true
}
