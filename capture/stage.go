// Package capture is the stage after the fetch: it decides what of an
// exchange is archived (warc-prefix, --method-filter, mime-type-filters,
// dedup and --blackout-period), turns it into WARC records (a response, or
// a revisit of an earlier capture, and the request), counts it in the
// stats buckets and hands it to the writer queue. Once the writer has the
// records on disk, the "written" step saves the payload for dedup, makes
// the stats increments durable and writes the crawl log line.
//
// The front end (package proxy) fills in an Exchange while it fetches and
// hands it over with Submit; nothing here knows about connections. The
// stores, the writer and the crawl log are reached through the small
// interfaces below, so the stage is tested with fakes.
package capture

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/lograte"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// Queue is where captures go: the writer pool.
type Queue interface {
	// Enqueue waits for room (back-pressure) and fails only when the
	// queue is closed or refuses the capture itself.
	Enqueue(ctx context.Context, c *writer.Capture) error
}

// Deduper finds earlier captures of a payload and remembers new ones (the
// dedup index, and a CDX server behind it).
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

// What the wiring (internal/app) plugs into these interfaces. The guards
// are here, where the interfaces are, since those packages are leaves that
// never import the capture stage.
var (
	_ Queue        = (*writer.Pool)(nil)
	_ Deduper      = (*dedup.Index)(nil)
	_ Deduper      = (*dedup.Layered)(nil) // with --cdxserver-dedup
	_ Prefetcher   = (*dedup.Layered)(nil)
	_ StatsTracker = (*stats.Tracker)(nil)
	_ CrawlLogger  = (*crawllog.Logger)(nil)
)

// Options configure a Stage.
type Options struct {
	Spooler *spool.Spooler // holds the recordings
	Queue   Queue
	Digest  digest.Algorithm // sha1 when empty
	// HashLanes are shared by every exchange's digests: a huge body's are
	// hashed on a spare core while a lane is free; nil: always inline.
	HashLanes *digest.Lanes
	Base32    bool
	// WARCVersion ("1.0" or "1.1") is what the writer writes: dedup
	// entries keep WARC-Date as written, and revisit records name the
	// version's profile.
	WARCVersion string
	// WARCProtocol adds WARC-Protocol and WARC-Cipher-Suite fields to the
	// request, response and revisit records (--warc-protocol).
	WARCProtocol bool
	// MethodFilter, if not empty, lists the only methods that are archived.
	MethodFilter []string
	// StoreTimeout bounds a limits check, made before the fetch while the
	// client waits; 0 means none. (Dedup lookups are bounded by the
	// index itself: dedup.Options.LookupTimeout.)
	StoreTimeout time.Duration

	// Dedup, if set, turns duplicates into revisit records; Stats, if
	// set, counts captures per bucket and checks limits; CrawlLog, if
	// set, gets a line per fetch.
	Dedup               Deduper
	Stats               StatsTracker
	CrawlLog            CrawlLogger
	DedupMinTextSize    int64
	DedupMinBinarySize  int64
	DedupOnlyWithBucket bool
	BlackoutPeriod      time.Duration

	// Registerer, if not nil, gets the stage's metrics.
	Registerer prometheus.Registerer
}

// Stage is the after-fetch chain.
type Stage struct {
	opts     Options
	logger   *slog.Logger
	metrics  *metrics // nil without Options.Registerer
	prefetch Prefetcher

	outcomes    [numOutcomes]atomic.Int64
	active      activeSet // exchanges not yet written, oldest first
	dedupErrors atomic.Int64
	dedupErrLog lograte.EverySecond
	crawlLogErr lograte.EverySecond
	failedLog   lograte.EverySecond // captures that cannot be archived

	reMu    sync.Mutex
	reCache map[string]reEntry
}

// New validates opts and builds a Stage.
func New(opts Options, logger *slog.Logger) (*Stage, error) {
	if opts.Spooler == nil {
		return nil, errors.New("capture: no spooler")
	}
	if opts.Queue == nil {
		return nil, errors.New("capture: no writer queue")
	}
	if opts.Digest == "" {
		opts.Digest = digest.SHA1
	}
	s := &Stage{opts: opts, logger: logger}
	s.prefetch, _ = opts.Dedup.(Prefetcher)
	if opts.Registerer != nil {
		var err error
		if s.metrics, err = newMetrics(s, opts.Registerer); err != nil {
			return nil, fmt.Errorf("capture: registering metrics: %w", err)
		}
	}
	return s, nil
}
