package writer

import (
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

const copySize = 64 << 10 // per worker, for reading blocks

// worker owns its files: one open file per prefix, written by nobody else.
type worker struct {
	p   *Pool
	log *slog.Logger

	files    map[string]*warcFile
	maxFiles int       // this worker's share of MaxOpenFiles; 0: no bound
	last     *warcFile // the file written last; flushed when the worker moves on
	// retry holds captures to write again after a write error, oldest
	// first; they are written before anything new is taken from the queue.
	retry   []*Capture
	backoff time.Duration
	// retrying is set by a write error and cleared once the retried
	// captures have reached the OS: until then nothing new is taken from
	// the queue, so that the queue keeps bounding what is held.
	retrying bool

	gz   *gzipSet  // gzip writers reused for every member; nil but with Gzip
	zst  *zstdSet  // zstd encoders reused for every frame; nil but with Zstd
	hdr  []byte    // reused header buffer
	cbuf []byte    // reused copy buffer
	hash hash.Hash // reused for digests the pool computes
	sum  []byte

	idle      *time.Timer // idle rollover; nil if RolloverIdle is 0
	idleArmed bool

	// unrenamed are closed files whose rename failed; tried again whenever
	// a file is closed and when the worker exits.
	unrenamed []*warcFile
}

func newWorker(p *Pool, id int) *worker {
	w := &worker{
		p:     p,
		log:   p.log.With("worker", id),
		files: make(map[string]*warcFile),
		hdr:   make([]byte, 0, 1024),
		cbuf:  make([]byte, copySize),
		hash:  p.opts.Digest.New(),
	}
	switch p.opts.Compression {
	case warcscan.Gzip:
		w.gz = newGzipSet(p.opts.GzipLevel, &p.stats.members)
	case warcscan.Zstd:
		w.zst = newZstdSet(p.opts.ZstdLevel, p.opts.ZstdDictionary, &p.stats.frames)
	}
	if p.opts.RolloverIdle > 0 {
		w.idle = time.NewTimer(p.opts.RolloverIdle)
		w.idle.Stop()
	}
	if p.opts.MaxOpenFiles > 0 {
		w.maxFiles = max(1, p.opts.MaxOpenFiles/p.opts.Workers)
	}
	return w
}

func (w *worker) run() {
	for {
		c, ok := w.next()
		if !ok {
			// Queue closed and drained: close the files. If that fails,
			// the captures whose bytes were lost are back in retry.
			w.closeAll()
			if len(w.retry) == 0 {
				break
			}
			continue
		}
		w.handle(c)
	}
	if w.idle != nil {
		w.idle.Stop()
	}
	w.retryRenames()
	for _, wf := range w.unrenamed {
		w.p.closeError(fmt.Errorf("%s left open-named: rename failed", wf.path))
	}
}

// next returns the next capture to write: a retried one, else one from the
// queue. Before waiting on an empty queue it hands buffered data to the OS,
// so captures are acknowledged promptly without a syscall per record under
// load. It reports false once the queue is closed and drained.
func (w *worker) next() (*Capture, bool) {
	for {
		if len(w.retry) > 0 {
			c := w.retry[0]
			w.retry[0] = nil
			w.retry = w.retry[1:]
			return c, true
		}
		if w.retrying {
			// Flush the retried captures before taking new ones; if that
			// fails they are back in retry (after the back-off).
			w.flushAll()
			if len(w.retry) > 0 {
				continue
			}
			w.retrying = false
			// After a forced Close the retried captures were dropped,
			// not written: the disk has not come back.
			if e := w.p.stats.lastErr.Load(); e != nil && !w.p.aborted() {
				w.log.Info("writing warc files again after errors", "failing_for", time.Since(e.since).Round(time.Millisecond).String(), "last_err", e.err)
			}
		}
		var idle <-chan time.Time
		if w.idle != nil {
			idle = w.idle.C
		}
		select {
		case c, ok := <-w.p.queue:
			if ok {
				w.p.dequeued(c)
			}
			return c, ok
		case <-idle:
			w.idleArmed = false
			w.idleRollover()
			continue
		default:
		}
		w.flushAll()
		if len(w.retry) > 0 {
			continue
		}
		select {
		case c, ok := <-w.p.queue:
			if ok {
				w.p.dequeued(c)
			}
			return c, ok
		case <-idle:
			w.idleArmed = false
			w.idleRollover()
		}
	}
}

// handle writes c, or drops it during a forced Close. After a write error
// it puts c (and the file's unacknowledged captures) back for a retry and
// sleeps the back-off.
func (w *worker) handle(c *Capture) {
	if w.p.aborted() {
		w.drop(c)
		return
	}
	prefix := c.Prefix
	if prefix == "" {
		prefix = w.p.opts.Prefix
	}
	if w.files[prefix] == nil && w.maxFiles > 0 && len(w.files) >= w.maxFiles {
		// Room for one more prefix: close the file written least recently.
		if !w.closeFile(w.leastRecent()) {
			// failed() has put that file's captures back and waited;
			// this one goes back too (first: the order within each
			// prefix, which is all a file holds, is kept either way).
			w.requeue(c)
			return
		}
	}
	wf, err := w.file(prefix)
	if err != nil {
		w.failed(nil, err, c)
		return
	}
	// A capture as large as a file goes into a file of its own.
	if wf.captures > 0 && rawSize(c) >= w.p.opts.RolloverSize {
		if err := wf.out.Flush(); err != nil {
			w.failed(wf, err, c)
			return
		}
		w.ack(wf)
		w.finish(wf, false)
		if wf, err = w.file(prefix); err != nil {
			w.failed(nil, err, c)
			return
		}
	}

	start := wf.out.Size()
	began := time.Now()
	for i := range c.Records {
		if err := w.writeRecord(wf, &c.Records[i]); err != nil {
			var rerr *readError
			if !errors.As(err, &rerr) {
				w.failed(wf, err, c)
				return
			}
			// The capture cannot be read, so retrying cannot help: undo
			// it and give it up.
			if cerr := wf.out.Cut(start); cerr != nil {
				w.failed(wf, fmt.Errorf("cutting back after a failed read: %w", cerr), nil)
			}
			w.p.stats.capturesFailed.Add(1)
			w.log.Error("capture dropped: block not readable", "file", wf.name, "err", err)
			if c.Done != nil {
				c.Done(err)
			}
			return
		}
	}
	c.File, c.Offset = filepath.Join(wf.dir, wf.name), start
	wf.captures++
	wf.lastWrite = time.Now()
	w.p.metrics.observeWrite(began)
	wf.pending = append(wf.pending, pending{c: c, end: wf.out.Size()})
	w.ack(wf)
	w.armIdle()

	// Hand another file's buffered captures to the OS when the worker
	// moves on, so they are not held back while this one takes the load.
	if w.last != nil && w.last != wf && len(w.last.pending) > 0 {
		if err := w.last.out.Flush(); err != nil {
			w.failed(w.last, err, nil)
		} else {
			w.ack(w.last)
		}
	}
	w.last = wf
	if wf.out.Size() >= w.p.opts.RolloverSize {
		w.closeFile(wf)
	}
}

// rawSize is the uncompressed size of a capture's blocks.
func rawSize(c *Capture) int64 {
	var n int64
	for i := range c.Records {
		n += c.Records[i].BlockLength
	}
	return n
}

// leastRecent is the open file written longest ago.
func (w *worker) leastRecent() *warcFile {
	var lru *warcFile
	for _, wf := range w.files {
		if lru == nil || wf.lastWrite.Before(lru.lastWrite) {
			lru = wf
		}
	}
	return lru
}
