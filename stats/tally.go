package stats

import "sync/atomic"

// Tallying: a capture counts in its buckets at once, and its increments
// become storable once it is on disk.

// Tally counts a capture in buckets now: Get and limits see it at once.
// Call Written once the capture is on disk (only then may the increments
// be stored) or Cancel if it was dropped. Names repeated in buckets count
// once; invalid names (see MaxNameLen) are skipped.
func (t *Tracker) Tally(buckets []string, o Outcome, wireBytes int64) *Tally {
	x := &Tally{d: delta(o, wireBytes), entries: make([]*entry, 0, len(buckets))}
	if t.store != nil {
		x.t = t
	}
	var seen seenNames
	for _, name := range buckets {
		if !validName(name) || seen.seen(name) {
			continue
		}
		x.entries = append(x.entries, t.update(name, func(e *entry) { e.local.add(x.d) }))
	}
	return x
}

// Tally is one capture's increments, from Tracker.Tally.
type Tally struct {
	t       *Tracker // nil for a memory-only Tracker
	entries []*entry
	d       Bucket
	state   atomic.Int32
}

const (
	tallyPending int32 = iota
	tallyWritten
	tallyCancelled
)

// Written reports the capture on disk: its increments go to the store
// with the next flush. Only the first of Written and Cancel counts.
func (x *Tally) Written() {
	if x == nil || !x.state.CompareAndSwap(tallyPending, tallyWritten) || x.t == nil {
		return
	}
	var queue []*entry
	for _, e := range x.entries {
		e.mu.Lock()
		e.ready.add(x.d)
		if !e.dirty {
			e.dirty = true
			queue = append(queue, e)
		}
		e.mu.Unlock()
	}
	if len(queue) > 0 {
		x.t.dirtyMu.Lock()
		x.t.dirty = append(x.t.dirty, queue...)
		x.t.dirtyMu.Unlock()
	}
}

// Cancel takes the capture's increments back out (it was not archived
// after all). Only the first of Written and Cancel counts.
func (x *Tally) Cancel() {
	if x == nil || !x.state.CompareAndSwap(tallyPending, tallyCancelled) {
		return
	}
	for _, e := range x.entries {
		e.mu.Lock()
		e.local.sub(x.d)
		e.mu.Unlock()
	}
}
