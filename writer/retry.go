package writer

import (
	"fmt"
	"time"
)

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
			p.closeError(fmt.Errorf("%s left open-named with a partial record: cutting back: %w", wf.path, cerr))
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
	attrs := []any{"err", err, "captures", len(redo)}
	if file != "" { // else no file was made: err names the one it tried
		attrs = append([]any{"file", file}, attrs...)
	}
	if p.aborted() {
		w.log.Error("writing warc file failed at shutdown", attrs...)
		return
	}
	w.backoff = min(max(w.backoff*2, p.opts.backoffMin), p.opts.backoffMax)
	w.log.Error("writing warc file failed, retrying", append(attrs, "retry_in", w.backoff)...)
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
