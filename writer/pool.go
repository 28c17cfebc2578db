// Package writer is the WARC writer pool: a bounded queue of captures drained
// by worker goroutines, each writing its own series of WARC files per prefix.
package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warcproxy/warcproxy/internal/warcscan"
	"golang.org/x/sync/semaphore"
)

// ErrClosed is returned by Enqueue once Close has been called, and wraps the
// error given to Done for captures dropped at a forced Close.
var ErrClosed = errors.New("writer pool closed")

// errDropped is given to Done for captures given up at a forced Close.
var errDropped = fmt.Errorf("%w: capture dropped at shutdown", ErrClosed)

// Pool writes captures to WARC files. Its methods are safe for concurrent
// use.
type Pool struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics // nil without Options.Registerer
	// queueBytes bounds the bytes waiting in the queue (QueueMaxBytes).
	queueBytes *semaphore.Weighted
	queue      chan *Capture
	names      *namer
	// warcinfo block (the same in every file) and its digest.
	warcinfoBlock  []byte
	warcinfoDigest string
	// fileHead starts every file before its warcinfo record: the
	// dictionary frame of a .warc.zst file with a dictionary, else empty.
	fileHead []byte
	start    time.Time // origin of fullSince

	// Intake: Enqueue holds mu for reading while it registers in enqueuers,
	// Close takes it for writing to set closed, so once closed is set no new
	// Enqueue can send and Close can wait for the ones in flight.
	mu        sync.RWMutex
	closed    bool
	enqueuers sync.WaitGroup
	closing   chan struct{} // closed by Close: wakes blocked Enqueue calls

	abort     chan struct{} // closed when Close's context ends: give up
	abortOnce sync.Once
	workers   sync.WaitGroup
	done      chan struct{} // closed when every worker has exited
	closeErrs []error       // problems for Close to report; guarded by mu
	closeErrN int           // how many there were

	// Back-pressure: enqueuers blocked on a full queue, and since when
	// (nanoseconds after start, 0 = not full) the queue has been full.
	waiters   atomic.Int64
	fullSince atomic.Int64

	stats counters
}

// New validates opts, creates the directory and starts the workers. The
// logger is used as given: the caller scopes it (logger.With("component",
// "writer")), as for every component. It may be nil.
func New(opts Options, logger *slog.Logger) (*Pool, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	names, err := newNamer(o)
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	if err := o.FS.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("writer: creating warc directory: %w", err)
	}
	p := &Pool{
		opts:    o,
		log:     logger,
		queue:   make(chan *Capture, o.QueueSize),
		names:   names,
		start:   time.Now(),
		closing: make(chan struct{}),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	if o.QueueMaxBytes > 0 {
		p.queueBytes = semaphore.NewWeighted(o.QueueMaxBytes)
	}
	if o.Registerer != nil {
		p.metrics = newMetrics(p)
		if err := o.Registerer.Register(p.metrics); err != nil {
			return nil, fmt.Errorf("writer: registering metrics: %w", err)
		}
	}
	p.warcinfoBlock = warcinfoBlock(o)
	p.warcinfoDigest = o.Digest.Of(p.warcinfoBlock, o.Base32)
	if o.ZstdDictionary != nil {
		p.fileHead = warcscan.ZstdDictFrame(o.ZstdDictionary)
	}
	p.workers.Add(o.Workers)
	for i := range o.Workers {
		w := newWorker(p, i)
		go func() {
			defer p.workers.Done()
			w.run()
		}()
	}
	go func() {
		p.workers.Wait()
		close(p.done)
	}()
	return p, nil
}

// warcinfoBlock renders the application/warc-fields block of every file's
// warcinfo record.
func warcinfoBlock(o Options) []byte {
	var b strings.Builder
	line := func(name, value string) {
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	line("software", o.Software)
	line("format", "WARC File Format "+o.WARCVersion)
	line("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-"+o.WARCVersion+"/")
	line("hostname", o.Hostname)
	for _, f := range o.WarcinfoFields {
		line(f.Name, f.Value)
	}
	return []byte(b.String())
}

// Enqueue hands c to the pool. It blocks while the queue is full (the pool
// never drops a capture to make room) and returns ctx.Err() if ctx ends
// first, ErrClosed once Close has been called, or an error if c is invalid.
// Only when Enqueue returns nil has the pool taken c: it then calls c.Done
// exactly once, and the caller must not touch c until then.
func (p *Pool) Enqueue(ctx context.Context, c *Capture) error {
	if err := checkCapture(c); err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrClosed
	}
	p.enqueuers.Add(1)
	p.mu.RUnlock()
	defer p.enqueuers.Done()

	if p.queueBytes != nil {
		if err := p.acquireBytes(ctx, c); err != nil {
			return err
		}
	}
	select {
	case p.queue <- c:
		// There was room: the queue is not full (unless others wait).
		if p.fullSince.Load() != 0 && p.waiters.Load() == 0 {
			p.fullSince.Store(0)
		}
		return nil
	default:
	}
	p.waiters.Add(1)
	defer p.waiters.Add(-1)
	p.fullSince.CompareAndSwap(0, p.now())
	select {
	case p.queue <- c:
		return nil
	case <-ctx.Done():
		p.releaseBytes(c)
		return ctx.Err()
	case <-p.closing:
		p.releaseBytes(c)
		return ErrClosed
	}
}

// queuedSize is what a capture weighs against QueueMaxBytes.
func (p *Pool) queuedSize(c *Capture) int64 {
	return min(max(rawSize(c), 1), p.opts.QueueMaxBytes)
}

// acquireBytes waits until the capture's bytes fit under QueueMaxBytes;
// while it waits the queue counts as full.
func (p *Pool) acquireBytes(ctx context.Context, c *Capture) error {
	n := p.queuedSize(c)
	if p.queueBytes.TryAcquire(n) {
		return nil
	}
	p.waiters.Add(1)
	defer p.waiters.Add(-1)
	p.fullSince.CompareAndSwap(0, p.now())
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-p.closing:
			cancel()
		case <-stop:
		}
	}()
	if err := p.queueBytes.Acquire(actx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return ErrClosed
	}
	return nil
}

// releaseBytes gives back a capture's bytes when it leaves the queue.
func (p *Pool) releaseBytes(c *Capture) {
	if p.queueBytes != nil {
		p.queueBytes.Release(p.queuedSize(c))
	}
}

// now is the time since the pool started, never 0.
func (p *Pool) now() int64 { return int64(time.Since(p.start)) + 1 }

// FullFor reports how long the queue has been continuously full, with
// enqueuers waiting or no free slot; 0 if it is not full. The proxy refuses
// new requests while it exceeds --queue-full-timeout.
func (p *Pool) FullFor() time.Duration {
	full := p.waiters.Load() > 0 || len(p.queue) == cap(p.queue)
	s := p.fullSince.Load()
	switch {
	case !full:
		if s != 0 {
			p.fullSince.CompareAndSwap(s, 0)
		}
		return 0
	case s == 0:
		// Full, but nobody has blocked on it yet: count from now.
		p.fullSince.CompareAndSwap(0, p.now())
		return 0
	}
	return time.Duration(p.now() - s)
}

// dequeued is called by a worker after taking a capture: the queue has a
// free slot unless a blocked enqueuer takes it.
func (p *Pool) dequeued(c *Capture) {
	p.releaseBytes(c)
	if p.fullSince.Load() != 0 && p.waiters.Load() == 0 {
		p.fullSince.Store(0)
	}
}

// aborted reports whether a forced Close is under way.
func (p *Pool) aborted() bool {
	select {
	case <-p.abort:
		return true
	default:
		return false
	}
}

// Close stops intake (Enqueue returns ErrClosed), lets the workers write
// everything queued and closes every file: flushed, synced and renamed
// without ".open". If ctx ends first, the workers finish the capture in hand,
// call Done with an error wrapping ErrClosed for the rest and still close
// their files; Close then returns an error saying how many captures were
// dropped. Close may be called more than once; later calls wait like the
// first. Its errors do not begin with "writer:": the caller names the
// component that reports them.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	first := !p.closed
	p.closed = true
	p.mu.Unlock()
	if first {
		close(p.closing)
		go func() {
			p.enqueuers.Wait()
			close(p.queue)
		}()
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.abortOnce.Do(func() { close(p.abort) })
		<-p.done
	}

	var errs []error
	if n := p.stats.capturesDropped.Load(); n > 0 {
		err := fmt.Errorf("closed before the queue was drained: %d captures dropped: %w", n, context.Cause(ctx))
		if first {
			p.log.Error("captures dropped at shutdown", "dropped", n, "err", err)
		}
		errs = append(errs, err)
	}
	p.mu.RLock()
	errs = append(errs, p.closeErrs...)
	if n := p.closeErrN - len(p.closeErrs); n > 0 {
		errs = append(errs, fmt.Errorf("%d more file errors (see log)", n))
	}
	p.mu.RUnlock()
	return errors.Join(errs...)
}

// maxCloseErrs bounds the errors kept for Close to report.
const maxCloseErrs = 20

// closeError records a problem for Close to report: a file it could not
// close cleanly, or one left behind with its ".open" name.
func (p *Pool) closeError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeErrN++
	if len(p.closeErrs) < maxCloseErrs {
		p.closeErrs = append(p.closeErrs, err)
	}
}

// Stats is a snapshot of the pool's counters.
type Stats struct {
	QueueLen int // captures waiting for a worker
	QueueCap int
	// CapturesWritten counts captures whose records all reached the OS.
	CapturesWritten uint64
	// CapturesDropped counts captures given up at a forced Close.
	CapturesDropped uint64
	// CapturesFailed counts captures whose blocks could not be read.
	CapturesFailed uint64
	// RecordsWritten counts records, warcinfo included; RecordsByType
	// splits them by WARC-Type ("other" for unknown types).
	RecordsWritten uint64
	RecordsByType  map[string]uint64
	// BytesWritten counts bytes in WARC files, warcinfo included, after
	// compression; bytes cut back after a write error are not counted.
	BytesWritten uint64
	FilesOpen    int64
	FilesClosed  uint64
	// WriteErrors counts failed writes, syncs, renames and file creations;
	// LastWriteError is the latest and LastWriteErrorAt its time. They
	// stay after the pool has recovered.
	WriteErrors      uint64
	LastWriteError   error
	LastWriteErrorAt time.Time
	// FailingSince is when the current run of write errors began, and
	// FailingError the text of the latest error of the run; both are
	// zero when the pool is not failing. A run ends, and both are
	// cleared, once a capture is written after its latest error. While a
	// run lasts, captures wait in the queue for their retries: a full
	// disk shows here, and as back-pressure (QueueLen, FullFor).
	FailingSince time.Time
	FailingError string
}

type counters struct {
	capturesWritten atomic.Uint64
	capturesDropped atomic.Uint64
	capturesFailed  atomic.Uint64
	records         [len(recordTypes)]atomic.Uint64
	members         memberCounts
	frames          frameCounts
	bytes           atomic.Uint64
	filesOpen       atomic.Int64
	filesClosed     atomic.Uint64
	writeErrors     atomic.Uint64
	lastErr         atomic.Pointer[timedError]
}

type timedError struct {
	err error
	at  time.Time
	// since is when the run of errors this one belongs to began; written
	// is capturesWritten when it happened: a run goes on while no capture
	// has been written since its latest error.
	since   time.Time
	written uint64
}

func (c *counters) writeError(err error) {
	c.writeErrors.Add(1)
	now := time.Now()
	e := &timedError{err: err, at: now, written: c.capturesWritten.Load()}
	for {
		prev := c.lastErr.Load()
		e.since = now
		if prev != nil && prev.written == e.written {
			e.since = prev.since // nothing written in between: the same run
		}
		if c.lastErr.CompareAndSwap(prev, e) {
			return
		}
	}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	s := Stats{
		QueueLen:        len(p.queue),
		QueueCap:        cap(p.queue),
		CapturesWritten: p.stats.capturesWritten.Load(),
		CapturesDropped: p.stats.capturesDropped.Load(),
		CapturesFailed:  p.stats.capturesFailed.Load(),
		RecordsByType:   make(map[string]uint64, len(recordTypes)),
		BytesWritten:    p.stats.bytes.Load(),
		FilesOpen:       p.stats.filesOpen.Load(),
		FilesClosed:     p.stats.filesClosed.Load(),
		WriteErrors:     p.stats.writeErrors.Load(),
	}
	for i, t := range recordTypes {
		n := p.stats.records[i].Load()
		s.RecordsWritten += n
		if n > 0 {
			s.RecordsByType[t] = n
		}
	}
	// The error first, then a fresh count: a capture counted after the
	// error was loaded was written after it and ends the run.
	if e := p.stats.lastErr.Load(); e != nil {
		s.LastWriteError, s.LastWriteErrorAt = e.err, e.at
		if p.stats.capturesWritten.Load() == e.written {
			s.FailingSince, s.FailingError = e.since, e.err.Error()
		}
	}
	return s
}
