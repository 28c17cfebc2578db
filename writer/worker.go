package writer

import (
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/gzip"
)

const (
	bufSize  = 256 << 10 // per open file
	copySize = 64 << 10  // per worker, for reading blocks
	// maxNameTries bounds the search for a free file name (a template
	// without {serialno} can yield the same name again and again).
	maxNameTries = 1000
)

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

	gz   *gzip.Writer // reused for every gzip member; nil without Gzip
	hdr  []byte       // reused header buffer
	cbuf []byte       // reused copy buffer
	hash hash.Hash    // reused for digests the pool computes
	sum  []byte

	idle      *time.Timer // idle rollover; nil if RolloverIdle is 0
	idleArmed bool

	// unrenamed are closed files whose rename failed; tried again whenever
	// a file is closed and when the worker exits.
	unrenamed []*warcFile
}

// warcFile is one open WARC file.
type warcFile struct {
	prefix     string
	dir        string // directory of the file
	name       string // final name
	path       string // path while open, with ".open"
	f          File
	out        *output
	warcinfoID string
	captures   int       // captures written into the file
	lastWrite  time.Time // for idle rollover
	// acked is the size up to which the file holds captures whose Done has
	// been called (the warcinfo record counts with the first); pending are
	// the captures written after it, whose bytes may still be buffered.
	acked   int64
	pending []pending
}

type pending struct {
	c   *Capture
	end int64 // file offset after the capture's last record
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
	if p.opts.Gzip {
		w.gz, _ = gzip.NewWriterLevel(io.Discard, p.opts.GzipLevel) // level checked in New
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
		w.p.closeError(fmt.Errorf("writer: %s left open-named: rename failed", wf.path))
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
			if e := w.p.stats.lastErr.Load(); e != nil {
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

// recordEnd follows every block.
var recordEnd = []byte("\r\n\r\n")

// readError marks an error reading a capture's block, as opposed to writing
// the file.
type readError struct{ err error }

func (e *readError) Error() string { return "reading block: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// writeRecord appends one record to wf: one gzip member when Gzip. It fills
// in the record's ID, Date and BlockDigest if they are empty.
func (w *worker) writeRecord(wf *warcFile, r *Record) error {
	if r.ID == "" {
		id, err := newRecordID()
		if err != nil {
			return &readError{err}
		}
		r.ID = id
	}
	if r.Date.IsZero() {
		r.Date = time.Now()
	}
	if r.BlockDigest == "" {
		w.hash.Reset()
		if err := w.copyBlock(w.hash, r); err != nil {
			return err
		}
		w.sum = w.hash.Sum(w.sum[:0])
		r.BlockDigest = w.p.opts.Digest.Format(w.sum, w.p.opts.Base32)
	}
	w.hdr = appendHeader(w.hdr[:0], header{version: w.p.opts.WARCVersion, warcinfoID: wf.warcinfoID}, r)

	var dst io.Writer = wf.out
	if w.gz != nil {
		w.gz.Reset(wf.out)
		dst = w.gz
	}
	if _, err := dst.Write(w.hdr); err != nil {
		return err
	}
	if err := w.copyBlock(dst, r); err != nil {
		return err
	}
	if _, err := dst.Write(recordEnd); err != nil {
		return err
	}
	if w.gz != nil {
		return w.gz.Close()
	}
	return nil
}

// copyBlock copies the record's block to dst through the worker's buffer.
// Read failures come back as *readError.
func (w *worker) copyBlock(dst io.Writer, r *Record) error {
	off, left := r.BlockOffset, r.BlockLength
	for left > 0 {
		b := w.cbuf[:min(int64(len(w.cbuf)), left)]
		n, err := r.Block.ReadAt(b, off)
		if n < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return &readError{fmt.Errorf("block of %d bytes at offset %d: %w", r.BlockLength, r.BlockOffset, err)}
		}
		if _, err := dst.Write(b); err != nil {
			return err
		}
		off += int64(n)
		left -= int64(n)
	}
	return nil
}

// ack calls Done for the captures of wf whose bytes have reached the OS.
func (w *worker) ack(wf *warcFile) {
	n := 0
	for _, pc := range wf.pending {
		if pc.end > wf.out.off {
			break
		}
		if wf.acked == 0 {
			w.p.stats.records[typeIndex("warcinfo")].Add(1)
		}
		w.p.stats.bytes.Add(uint64(pc.end - wf.acked))
		wf.acked = pc.end
		for i := range pc.c.Records {
			w.p.stats.records[typeIndex(pc.c.Records[i].Type)].Add(1)
		}
		w.p.stats.capturesWritten.Add(1)
		if pc.c.Done != nil {
			pc.c.Done(nil)
		}
		n++
	}
	if n > 0 {
		w.backoff = 0 // captures reached the OS: the next error starts over
		clear(wf.pending[:n])
		wf.pending = append(wf.pending[:0], wf.pending[n:]...)
	}
}

// flushAll hands every file's buffered data to the OS.
func (w *worker) flushAll() {
	for _, wf := range w.files {
		if len(wf.out.buf) == 0 {
			continue
		}
		if err := wf.out.Flush(); err != nil {
			w.failed(wf, err, nil)
			continue
		}
		w.ack(wf)
	}
}

// file returns the worker's open file for prefix, opening a new one (with
// its warcinfo record) if there is none.
func (w *worker) file(prefix string) (*warcFile, error) {
	if wf := w.files[prefix]; wf != nil {
		return wf, nil
	}
	p := w.p
	dir := p.opts.Dir
	if p.opts.SubdirPrefix {
		dir = filepath.Join(dir, prefix)
	}
	var (
		name, path string
		f          File
	)
	for range maxNameTries {
		name = p.names.render(prefix, p.names.nextSerial(prefix), time.Now())
		final := filepath.Join(dir, name)
		if _, err := p.opts.FS.Stat(final); err == nil {
			continue // a closed file of that name exists (another process?)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("checking warc file name: %w", err)
		}
		path = final + ".open"
		var err error
		f, err = p.opts.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			// The directory went away (an operator cleaning up?): make
			// it again, and fail on the next try if that did not help.
			if merr := p.opts.FS.MkdirAll(dir, 0o755); merr != nil {
				return nil, fmt.Errorf("creating warc directory: %w", merr)
			}
			f, err = p.opts.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
		if err != nil {
			return nil, fmt.Errorf("opening warc file: %w", err)
		}
		break
	}
	if f == nil {
		return nil, fmt.Errorf("opening warc file: no free name after %d tries (last %s)", maxNameTries, name)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		_ = p.opts.FS.Remove(path)
		return nil, err
	}
	// Between creating the file and locking it, another instance's crash
	// recovery may have taken the empty, unlocked file for abandoned and
	// removed it: make sure the name still points at the file we hold.
	if sf, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
		fi, e1 := sf.Stat()
		li, e2 := p.opts.FS.Stat(path)
		if e1 != nil || e2 != nil || !os.SameFile(fi, li) {
			_ = f.Close()
			return nil, fmt.Errorf("opening warc file: %s was removed while it was being created (another instance recovering the directory?)", path)
		}
	}
	infoID, err := newRecordID()
	if err != nil {
		_ = f.Close()
		_ = p.opts.FS.Remove(path)
		return nil, err
	}
	wf := &warcFile{
		prefix:    prefix,
		dir:       dir,
		name:      name,
		path:      path,
		f:         f,
		out:       newOutput(f, make([]byte, bufSize)),
		lastWrite: time.Now(),
	}
	// The warcinfo record is buffered with the file's first capture and
	// acknowledged with it.
	info := Record{
		Type:        "warcinfo",
		ID:          infoID,
		Date:        time.Now(),
		ContentType: "application/warc-fields",
		Fields:      []Field{{Name: "WARC-Filename", Value: name}},
		Block:       bytesReaderAt(p.warcinfoBlock),
		BlockLength: int64(len(p.warcinfoBlock)),
		BlockDigest: p.warcinfoDigest,
	}
	if err := w.writeRecord(wf, &info); err != nil {
		_ = f.Close()
		_ = p.opts.FS.Remove(path)
		return nil, fmt.Errorf("writing warcinfo: %w", err)
	}
	wf.warcinfoID = infoID
	w.files[prefix] = wf
	p.stats.filesOpen.Add(1)
	w.log.Debug("opened warc file", "file", name)
	return wf, nil
}

// bytesReaderAt reads a byte slice.
type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// closeFile flushes, syncs, closes and renames wf. It reports false if the
// flush failed; the file's unacknowledged captures are then back in retry.
func (w *worker) closeFile(wf *warcFile) bool {
	if err := wf.out.Flush(); err != nil {
		w.failed(wf, err, nil)
		return false
	}
	w.ack(wf)
	// A file whose only capture could not be read holds just its
	// warcinfo: not worth keeping.
	w.finish(wf, wf.acked == 0)
	return true
}

// finish syncs, closes and renames (or, if empty, removes) a file whose
// acknowledged part is final, and forgets it.
func (w *worker) finish(wf *warcFile, empty bool) {
	p := w.p
	delete(w.files, wf.prefix)
	if w.last == wf {
		w.last = nil
	}
	p.stats.filesOpen.Add(-1)
	fail := func(msg string, err error) {
		p.stats.writeError(err)
		w.log.Error(msg, "file", wf.path, "err", err)
		if p.aborted() || isClosed(p) {
			p.closeError(fmt.Errorf("writer: %s %s: %w", msg, wf.path, err))
		}
	}
	if empty {
		if err := wf.f.Close(); err != nil {
			fail("closing empty warc file", err)
		}
		if err := p.opts.FS.Remove(wf.path); err != nil {
			fail("removing empty warc file", err)
		}
		return
	}
	// A failed sync is reported but the file is still renamed: its
	// captures were acknowledged and nothing would be gained by hiding it.
	if err := wf.f.Sync(); err != nil {
		fail("syncing warc file", err)
	}
	if err := wf.f.Close(); err != nil {
		fail("closing warc file", err)
	}
	if err := p.opts.FS.Rename(wf.path, filepath.Join(wf.dir, wf.name)); err != nil {
		p.stats.writeError(err)
		w.log.Error("renaming warc file failed, will try again", "file", wf.path, "err", err)
		w.unrenamed = append(w.unrenamed, wf)
		return
	}
	p.stats.filesClosed.Add(1)
	w.log.Debug("closed warc file", "file", wf.name, "bytes", wf.acked, "captures", wf.captures)
	if p.opts.OnClose != nil {
		p.opts.OnClose(filepath.Join(wf.dir, wf.name))
	}
	w.retryRenames()
}

// retryRenames tries again to rename the files whose rename failed.
func (w *worker) retryRenames() {
	kept := w.unrenamed[:0]
	for _, wf := range w.unrenamed {
		if err := w.p.opts.FS.Rename(wf.path, filepath.Join(wf.dir, wf.name)); err != nil {
			kept = append(kept, wf)
			continue
		}
		w.p.stats.filesClosed.Add(1)
		w.log.Info("renamed warc file after an earlier failure", "file", wf.name)
		if w.p.opts.OnClose != nil {
			w.p.opts.OnClose(filepath.Join(wf.dir, wf.name))
		}
	}
	clear(w.unrenamed[len(kept):])
	w.unrenamed = kept
}

// isClosed reports whether Close has been called.
func isClosed(p *Pool) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.closed
}

// failed handles a write error. If wf is set, it cuts the file back to its
// acknowledged captures and closes it (an empty one is removed); the
// captures written after those go back to retry, followed by c. Then it
// sleeps the back-off, or drops everything during a forced Close.
func (w *worker) failed(wf *warcFile, err error, c *Capture) {
	p := w.p
	// Captures whose bytes reached the OS before the error stay; they are
	// counted before the error, so that the error starts a failing run.
	if wf != nil {
		w.ack(wf)
	}
	p.stats.writeError(err)
	var redo []*Capture
	file := ""
	if wf != nil {
		file = wf.path
		for _, pc := range wf.pending {
			redo = append(redo, pc.c)
		}
		clear(wf.pending)
		wf.pending = wf.pending[:0]
		if cerr := wf.out.Cut(wf.acked); cerr != nil {
			// The file keeps a partial record at its end; leave it
			// ".open" so that nobody takes it for a finished file.
			p.stats.writeError(cerr)
			w.log.Error("cutting back warc file failed, leaving it open-named", "file", wf.path, "err", cerr)
			// Close reports it whenever it happened: the file stays.
			p.closeError(fmt.Errorf("writer: %s left open-named with a partial record: cutting back: %w", wf.path, cerr))
			delete(w.files, wf.prefix)
			if w.last == wf {
				w.last = nil
			}
			p.stats.filesOpen.Add(-1)
			_ = wf.f.Close()
		} else {
			w.finish(wf, wf.acked == 0)
		}
	}
	if c != nil {
		redo = append(redo, c)
	}
	w.requeue(redo...)
	w.retrying = true
	if p.aborted() {
		w.log.Error("writing warc file failed at shutdown", "file", file, "err", err, "captures", len(redo))
		return
	}
	w.backoff = min(max(w.backoff*2, p.opts.backoffMin), p.opts.backoffMax)
	w.log.Error("writing warc file failed, retrying", "file", file, "err", err,
		"captures", len(redo), "retry_in", w.backoff)
	t := time.NewTimer(w.backoff)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.abort:
	}
}

// requeue puts captures at the front of the retry list, or drops them during
// a forced Close.
func (w *worker) requeue(cs ...*Capture) {
	if w.p.aborted() {
		for _, c := range cs {
			w.drop(c)
		}
		return
	}
	w.retry = append(cs, w.retry...)
}

func (w *worker) drop(c *Capture) {
	w.p.stats.capturesDropped.Add(1)
	if c.Done != nil {
		c.Done(errDropped)
	}
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

// closeAll closes every open file of the worker.
func (w *worker) closeAll() {
	for _, wf := range w.files {
		w.closeFile(wf)
	}
}

// armIdle starts the idle timer if it is not running.
func (w *worker) armIdle() {
	if w.idle != nil && !w.idleArmed {
		w.idle.Reset(w.p.opts.RolloverIdle)
		w.idleArmed = true
	}
}

// idleRollover closes the files not written for RolloverIdle and re-arms the
// timer for the next one due.
func (w *worker) idleRollover() {
	now := time.Now()
	var next time.Duration
	for _, wf := range w.files {
		idle := now.Sub(wf.lastWrite)
		if idle >= w.p.opts.RolloverIdle {
			w.log.Debug("rolling over idle warc file", "file", wf.name, "idle", idle)
			w.closeFile(wf)
			continue
		}
		if d := w.p.opts.RolloverIdle - idle; next == 0 || d < next {
			next = d
		}
	}
	if next > 0 {
		w.idle.Reset(next)
		w.idleArmed = true
	}
}
