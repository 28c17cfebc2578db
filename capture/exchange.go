package capture

import (
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/wire"
)

// WARC-Truncated reasons.
const (
	TruncLength     = "length"     // over --max-resource-size
	TruncTime       = "time"       // --fetch-timeout, or the origin timed out
	TruncDisconnect = "disconnect" // the client or the origin went away
)

// Exchange is one request/response pair on its way to the WARC writer.
// The front end sets the request's fields before Open, and fills in the
// response's as the fetch goes; the stage owns it from Submit (or
// Abandon) on.
type Exchange struct {
	Start     time.Time
	TargetURI string
	Method    string
	Referer   string
	Meta      *warcproxmeta.Meta // nil without the header
	Prefix    string             // WARC prefix: the default or warc-prefix; "-" is not archived

	// Request and Response record the bytes on the origin connection;
	// both nil when the exchange is not archived. Payload hashes the
	// transfer-decoded body as it passes to the client (Payload.H nil
	// when nothing needs its digest). Open sets them.
	Request, Response *wire.Recorder
	Payload           wire.Payload
	payloadHash       digest.Async // Payload.H's, held here: no allocation of its own

	IP             string // the origin's address
	TLSVersion     string // "tls/1.3" when TLS carried the exchange upstream, else ""
	CipherSuite    string // its IANA name, or ""
	ResStart       int64  // where the final response starts in Response (after 1xx)
	HeadEnd        int64  // where its head ends (a revisit's block ends here)
	ResEnd         int64  // where it ends
	Status         int
	ContentType    string // the response's first Content-Type header
	HasContentType bool
	Truncated      string // a WARC-Truncated reason, or ""
	// BrokenFraming: the chunked body broke off with bad framing (a bad
	// chunk size line). The stage then ends the response record after the
	// last whole chunk (see finish).
	BrokenFraming bool

	archive       bool
	responseID    string   // WARC-Record-ID of its response (or revisit) record, once queued
	statsBuckets  []string // nil without a stats tracker
	mimeType      string
	payloadDigest string
	end           time.Time
	active        activeNode // in Stage.active until written
	settled       bool       // submitted or abandoned
}

// Archived reports whether the exchange is archived: before Submit,
// whether it is recorded (what Open decided); after, whether it went to
// the writer (not filtered out, not in blackout, queued).
func (ex *Exchange) Archived() bool { return ex.archive }

// SpoolErr is why the exchange, while it is still being fetched, can no
// longer be archived: its request or response bytes could not be spooled
// (a full disk). nil when they could, or when it is not recorded.
func (ex *Exchange) SpoolErr() error {
	if ex.Response != nil && ex.Response.Err() != nil {
		return ex.Response.Err()
	}
	if ex.Request != nil {
		return ex.Request.Err()
	}
	return nil
}

// Open starts an admitted exchange: it decides whether it is archived
// (its prefix, --method-filter), opens its recorders, starts a dedup
// prefetch and counts it as active until it is written.
func (s *Stage) Open(ex *Exchange) {
	if s.opts.Stats != nil {
		ex.statsBuckets = stats.Buckets(ex.TargetURI, ex.Meta)
	}
	s.active.add(&ex.active, ex.Start)
	ex.archive = ex.Prefix != "-" && s.methodArchived(ex.Method)
	if ex.archive {
		if s.prefetch != nil && s.dedupWanted(ex.Meta) {
			s.prefetch.Prefetch(ex.TargetURI)
		}
		s.record(ex)
	}
	if ex.archive || s.opts.CrawlLog != nil {
		// The crawl log names the payload digest of what is not archived
		// too, as warcprox's does.
		ex.payloadHash.Init(s.opts.Digest.New(), s.opts.HashLanes) // a huge body on a spare core
		ex.Payload.H = &ex.payloadHash
	}
}

// Rerecord starts the recordings over, for a request sent again on a new
// connection after the first one turned out stale.
func (s *Stage) Rerecord(ex *Exchange) {
	if ex.archive {
		ex.release()
		s.record(ex)
	}
}

func (s *Stage) record(ex *Exchange) {
	ex.Request = wire.NewRecorder(s.opts.Spooler, s.opts.Digest, s.opts.HashLanes)
	ex.Response = wire.NewRecorder(s.opts.Spooler, s.opts.Digest, s.opts.HashLanes)
}

// Abandon ends an exchange that got no response worth submitting (the
// origin failed, the client left first): its recordings are released. It
// does nothing once the exchange was submitted, so a front end can defer it.
func (s *Stage) Abandon(ex *Exchange) {
	if ex.settled {
		return
	}
	ex.settled = true
	ex.release()
	s.active.remove(&ex.active)
}

func (ex *Exchange) release() {
	ex.Request.Close()
	ex.Response.Close()
	ex.Payload.Release()
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
