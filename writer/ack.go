package writer

// A capture's Done is called only once its bytes have left the worker's
// buffer for the OS, so that a write error can still put it back for a
// retry; until then it waits in its file's pending list.

// pending is a capture written into a file's buffer, not yet acknowledged.
type pending struct {
	c   *Capture
	end int64 // file offset after the capture's last record
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
