package upload

import (
	"context"
	"errors"
	"time"
)

// Leftovers of an earlier run: its multipart uploads cut by a crash, and
// its completion events not acknowledged.

// abortLeftovers aborts the multipart uploads under the prefix that a
// crash (kill -9 in the middle of an upload) left: those of a file queued
// here, which is shipped again whole, and those begun longer ago than
// StaleUploads, whose uploader is gone. The uploads of other live
// processes on the same prefix are left alone. It is retried until the
// store answers; shipping starts after it, so that no upload of this run
// is taken for a leftover. It returns false when hard ended first.
func (s *Shipper) abortLeftovers(hard context.Context) bool {
	wait := s.opts.RetryMin
	for {
		err := s.tryAbortLeftovers(hard)
		if err == nil {
			return true
		}
		if hard.Err() != nil {
			return false
		}
		s.metrics.failed(Reason(err))
		s.log.Warn("listing the multipart uploads left under the prefix failed, will try again",
			"target", s.opts.Target.String(), "in", wait, "err", err)
		if !s.pause(hard, &wait) {
			return false
		}
	}
}

func (s *Shipper) tryAbortLeftovers(ctx context.Context) error {
	ups, err := s.opts.Store.Uploads(ctx, s.opts.Target.Prefix)
	if err != nil {
		return err
	}
	ours := s.queuedKeys()
	var errs []error
	aborted := 0
	for _, u := range ups {
		if !ours[u.Key] && time.Since(u.Initiated) < s.opts.StaleUploads {
			continue
		}
		if err := s.opts.Store.Abort(ctx, u); err != nil {
			errs = append(errs, err)
			continue
		}
		aborted++
		s.log.Info("aborted a multipart upload left by an earlier run", "url", s.opts.Target.URL(u.Key),
			"initiated", u.Initiated)
	}
	s.metrics.abortedUploads.Add(uint64(aborted))
	return errors.Join(errs...)
}

// queuedKeys are the keys of the files queued now.
func (s *Shipper) queuedKeys() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := map[string]bool{}
	for _, u := range s.queue {
		k, _ := s.key(u.Path, u.Kind)
		keys[k] = true
		for _, c := range u.With {
			k, _ := s.key(c.Path, c.Kind)
			keys[k] = true
		}
	}
	return keys
}

// queueUnsentEvents queues, at start, the files whose completion event
// was not acknowledged before the last run ended, and which are not
// queued to ship: their event is sent again (the file may be gone).
func (s *Shipper) queueUnsentEvents() {
	if s.opts.Notifier == nil {
		return
	}
	states, err := Shipped(s.opts.Dir)
	if err != nil {
		s.log.Error("reading the upload states", "dir", s.opts.Dir, "err", err)
	}
	s.mu.Lock()
	queued := map[string]bool{}
	for _, u := range s.queue {
		queued[u.Path] = true
		for _, c := range u.With {
			queued[c.Path] = true
		}
	}
	s.mu.Unlock()
	for _, st := range states {
		if !st.EventSent && st.Event != nil && !queued[st.Path] {
			s.Add(Unit{Path: st.Path, Kind: st.Kind})
		}
	}
}
