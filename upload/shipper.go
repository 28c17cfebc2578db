package upload

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Options configure a Shipper.
type Options struct {
	// Dir is --dir: a WARC's or CDXJ's key is the target's prefix plus its
	// path relative to Dir, and the states live under Dir/StateDir.
	Dir    string
	Target Target
	Store  Store
	// Workers ship that many files at once (--upload-workers). Default 2.
	Workers int
	// KeepLocal keeps the local copy of what was shipped.
	KeepLocal bool
	Logger    *slog.Logger
	// RetryMin and RetryMax bound the back-off between attempts at one
	// file. Defaults 1 s and 1 min.
	RetryMin, RetryMax time.Duration
	// Notifier, if set, gets a completion event for each file once the
	// store confirmed it (--upload-webhook).
	Notifier Notifier
	// PrefixOf names the WARC prefix of a WARC file for its event.
	PrefixOf func(path string) string
	// StaleUploads: multipart uploads under the prefix begun longer ago
	// than this are aborted at start even when no file here is theirs
	// (a pod whose disk is gone left them). Default 24 h.
	StaleUploads time.Duration
}

// Kinds of files shipped.
const (
	KindWARC     = "warc"
	KindCDXJ     = "cdxj"
	KindCrawlLog = "crawllog"
)

// Unit is a file to ship, with the files that go with it (a WARC's CDXJ
// index): it is deleted locally only when all of them are confirmed.
type Unit struct {
	Path string
	Kind string
	// With are companion files, shipped after Path. One that is missing
	// keeps the whole unit on disk (a WARC whose index was not written).
	With []Companion
	// Recovered: closed by the crash recovery at start, not by its writer
	// (its completion event says completed false).
	Recovered bool
	added     time.Time
	size      int64
}

// Companion is a file shipped with a unit.
type Companion struct {
	Path, Kind string
}

// Shipper ships closed files to the store: the stage after the writer
// (and the CDXJ indexer). Files queue by name only; the backlog is on
// disk. Run ships them with Options.Workers workers, retrying each with
// back-off until the store confirms it or the shutdown ends.
type Shipper struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	mu       sync.Mutex
	queue    []Unit
	inFlight map[string]Unit // by path
	closed   bool
	wake     chan struct{} // a token when the queue grew or closed
	warned   sync.Once     // the checksum fall-back is logged once
}

// New returns a Shipper; Run works through its queue.
func New(o Options) *Shipper {
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.RetryMin == 0 {
		o.RetryMin = time.Second
	}
	if o.RetryMax == 0 {
		o.RetryMax = time.Minute
	}
	if o.StaleUploads == 0 {
		o.StaleUploads = 24 * time.Hour
	}
	s := &Shipper{opts: o, log: o.Logger, inFlight: map[string]Unit{}, wake: make(chan struct{}, 1)}
	s.metrics = newMetrics(s)
	return s
}

// Add queues a closed file. It may come from a writer goroutine: it only
// appends the name (and the file's size, for the backlog metrics).
func (s *Shipper) Add(u Unit) {
	u.added = time.Now()
	if fi, err := os.Stat(u.Path); err == nil {
		u.size = fi.Size()
		u.added = fi.ModTime()
	}
	for _, c := range u.With {
		if fi, err := os.Stat(c.Path); err == nil {
			u.size += fi.Size()
		}
	}
	s.mu.Lock()
	s.queue = append(s.queue, u)
	s.mu.Unlock()
	s.signal()
}

// Close says no more files come: Run returns once the queue is shipped.
func (s *Shipper) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

func (s *Shipper) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run first aborts the multipart uploads a crash left under the prefix,
// then ships the queue until Close and an empty queue. When hard ends
// first (the shutdown budget is spent), uploads in flight are cut and
// what is left stays on disk for the next start: that is logged with
// its count and bytes, and is not an error, since nothing is lost.
func (s *Shipper) Run(hard context.Context) error {
	if !s.abortLeftovers(hard) {
		return s.report(hard)
	}
	s.queueUnsentEvents()
	var wg sync.WaitGroup
	for range s.opts.Workers {
		wg.Go(func() { s.work(hard) })
	}
	wg.Wait()
	return s.report(hard)
}

// report logs what is left on disk when the shutdown cut the shipping.
func (s *Shipper) report(hard context.Context) error {
	for !s.isClosed() {
		<-s.wake // the writer closes its files after hard too: count them
	}
	files, bytes := s.Backlog()
	if files > 0 {
		s.log.Warn("files left to ship at the next start", "files", files, "bytes", bytes,
			"target", s.opts.Target.String(), "why", context.Cause(hard))
	}
	return nil
}

func (s *Shipper) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// work ships units until the queue is closed and empty, or hard ends.
func (s *Shipper) work(hard context.Context) {
	for {
		u, ok := s.next(hard)
		if !ok {
			return
		}
		left := !s.shipUnit(hard, u)
		s.mu.Lock()
		delete(s.inFlight, u.Path)
		if left {
			// Cut by the end of the budget: still on disk, still owed,
			// and counted as such in what is left for the next start.
			s.queue = append([]Unit{u}, s.queue...)
		}
		s.mu.Unlock()
		s.signal() // another worker may be waiting for the last one
	}
}

// next takes the next unit, waiting for one; ok is false once the queue
// is closed and empty, or hard ended.
func (s *Shipper) next(hard context.Context) (Unit, bool) {
	for hard.Err() == nil {
		s.mu.Lock()
		if len(s.queue) > 0 {
			u := s.queue[0]
			s.queue = s.queue[1:]
			s.inFlight[u.Path] = u
			s.mu.Unlock()
			return u, true
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			s.signal() // wake the other workers, so they see it too
			return Unit{}, false
		}
		select {
		case <-s.wake:
		case <-hard.Done():
		}
	}
	return Unit{}, false
}

// Backlog is what waits to be shipped: files queued or in flight, and
// their bytes.
func (s *Shipper) Backlog() (files int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.queue {
		files, bytes = files+1+len(u.With), bytes+u.size
	}
	for _, u := range s.inFlight {
		files, bytes = files+1+len(u.With), bytes+u.size
	}
	return files, bytes
}

// Oldest is when the oldest file waiting was closed (zero when none is).
func (s *Shipper) Oldest() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest time.Time
	for _, u := range s.queue {
		if oldest.IsZero() || u.added.Before(oldest) {
			oldest = u.added
		}
	}
	for _, u := range s.inFlight {
		if oldest.IsZero() || u.added.Before(oldest) {
			oldest = u.added
		}
	}
	return oldest
}

// Target is where the files go.
func (s *Shipper) Target() Target { return s.opts.Target }

func (s *Shipper) String() string { return fmt.Sprintf("shipper to %s", s.opts.Target) }

// pause waits *wait, jittered by up to a quarter, and doubles it up to
// RetryMax: the back-off between attempts. It returns false when hard
// ends first.
func (s *Shipper) pause(hard context.Context, wait *time.Duration) bool {
	select {
	case <-time.After(*wait + rand.N(*wait/4+1)):
	case <-hard.Done():
		return false
	}
	*wait = min(*wait*2, s.opts.RetryMax)
	return true
}
