package writer

import "time"

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
