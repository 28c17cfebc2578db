package writer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const (
	bufSize = 256 << 10 // per open file
	// maxNameTries bounds the search for a free file name (a template
	// without {serialno} numbers the names it yields again: it finds a
	// free one among at most this many taken ones).
	maxNameTries = 1000
)

// warcFile is one open WARC file.
type warcFile struct {
	prefix     string
	dir        string // directory of the file
	name       string // final name
	serial     int    // the {serialno} in name
	path       string // path while open: with ".open", or the final one (NoOpenSuffix)
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

// file returns the worker's open file for prefix, opening a new one (with
// its head and warcinfo record) if there is none.
func (w *worker) file(prefix string) (*warcFile, error) {
	if wf := w.files[prefix]; wf != nil {
		return wf, nil
	}
	p := w.p
	dir := p.opts.Dir
	if p.opts.SubdirPrefix {
		dir = filepath.Join(dir, prefix)
	}
	name, serial, path, f, err := p.createFile(dir, prefix)
	if err != nil {
		return nil, err
	}
	wf := &warcFile{
		prefix:    prefix,
		dir:       dir,
		name:      name,
		serial:    serial,
		path:      path,
		f:         f,
		out:       newOutput(f, make([]byte, bufSize)),
		lastWrite: time.Now(),
	}
	if err := w.writeHead(wf); err != nil {
		_ = f.Close()
		_ = p.opts.FS.Remove(path)
		p.names.giveBack(prefix, serial)
		return nil, err
	}
	w.files[prefix] = wf
	p.stats.filesOpen.Add(1)
	w.log.Debug("opened warc file", "file", name)
	return wf, nil
}

// createFile creates and locks a new file in dir under the next free name
// for prefix (its final name, or that plus .open), and says which serial
// number the name has.
func (p *Pool) createFile(dir, prefix string) (name string, serial int, path string, f File, err error) {
	// A template that renders a taken name again (one without {serialno},
	// such as "{prefix}" or "{prefix}-{timestamp14}" within its second)
	// would search in vain until the clock moved, or forever: such a name
	// is numbered instead, "NAME-1.warc.gz", "NAME-2.warc.gz"...
	var last string
	dup := 0
	for range maxNameTries {
		var now time.Time
		serial, now = p.names.nextSerial(prefix), time.Now()
		name = p.names.render(prefix, serial, now, 0)
		if name == last {
			dup++
			name = p.names.render(prefix, serial, now, dup)
		} else {
			last, dup = name, 0
		}
		path, f, err = p.openNew(dir, name)
		if errors.Is(err, errNameTaken) {
			continue
		}
		if err != nil {
			p.names.giveBack(prefix, serial)
			return "", 0, "", nil, err
		}
		return name, serial, path, f, nil
	}
	return "", 0, "", nil, fmt.Errorf("opening warc file: no free name after %d tries (last %s)", maxNameTries, name)
}

// errNameTaken: a file of the name tried exists already.
var errNameTaken = errors.New("warc file name taken")

// openNew creates and locks dir/name (or that plus .open) and returns the
// path it has while open; errNameTaken if a file of that name exists.
func (p *Pool) openNew(dir, name string) (path string, f File, err error) {
	final := filepath.Join(dir, name)
	if _, err := p.opts.FS.Stat(final); err == nil {
		return "", nil, errNameTaken // a closed file of that name (another process?)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("checking warc file name: %w", err)
	}
	path = final + openSuffix
	if p.opts.NoOpenSuffix {
		path = final
	}
	f, err = p.opts.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return "", nil, errNameTaken
	}
	if errors.Is(err, fs.ErrNotExist) {
		// The directory went away (an operator cleaning up?): make it
		// again, and fail on the next try if that did not help.
		if merr := p.opts.FS.MkdirAll(dir, 0o755); merr != nil {
			return "", nil, fmt.Errorf("creating warc directory: %w", merr)
		}
		f, err = p.opts.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", nil, fmt.Errorf("opening warc file: %w", err)
	}
	if err := p.lock(f, path); err != nil {
		return "", nil, err
	}
	return path, f, nil
}

// lock locks the new file f at path; on failure f is closed (and removed
// if it is still ours).
func (p *Pool) lock(f File, path string) error {
	if err := lockFile(f); err != nil {
		_ = f.Close()
		_ = p.opts.FS.Remove(path)
		return err
	}
	// Between creating the file and locking it, another instance's crash
	// recovery may have taken the empty, unlocked file for abandoned and
	// removed it: make sure the name still points at the file we hold.
	if sf, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
		fi, e1 := sf.Stat()
		li, e2 := p.opts.FS.Stat(path)
		if e1 != nil || e2 != nil || !os.SameFile(fi, li) {
			_ = f.Close()
			return fmt.Errorf("opening warc file: %s was removed while it was being created (another instance recovering the directory?)", path)
		}
	}
	return nil
}

// writeHead buffers the file's head (a zstd dictionary frame) and its
// warcinfo record; they reach the OS with the file's first capture and are
// acknowledged with it.
func (w *worker) writeHead(wf *warcFile) error {
	infoID, err := newRecordID()
	if err != nil {
		return err
	}
	info := Record{
		Type:        "warcinfo",
		ID:          infoID,
		Date:        time.Now(),
		ContentType: "application/warc-fields",
		Fields:      []Field{{Name: "WARC-Filename", Value: wf.name}},
		Block:       bytesReaderAt(w.p.warcinfoBlock),
		BlockLength: int64(len(w.p.warcinfoBlock)),
		BlockDigest: w.p.warcinfoDigest,
	}
	if _, err := wf.out.Write(w.p.fileHead); err != nil {
		return fmt.Errorf("writing warcinfo: %w", err)
	}
	if err := w.writeRecord(wf, &info); err != nil {
		return fmt.Errorf("writing warcinfo: %w", err)
	}
	wf.warcinfoID = infoID
	return nil
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
			p.closeError(fmt.Errorf("%s %s: %w", msg, wf.path, err))
		}
	}
	if empty {
		if err := wf.f.Close(); err != nil {
			fail("closing empty warc file", err)
		}
		if err := p.opts.FS.Remove(wf.path); err != nil {
			fail("removing empty warc file", err)
		} else {
			p.names.giveBack(wf.prefix, wf.serial)
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
	if final := filepath.Join(wf.dir, wf.name); wf.path == final {
		// Written under its final name (NoOpenSuffix): nothing to rename.
	} else if err := p.opts.FS.Rename(wf.path, final); err != nil {
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

// closeAll closes every open file of the worker.
func (w *worker) closeAll() {
	for _, wf := range w.files {
		w.closeFile(wf)
	}
}
