package upload

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// permanent is a failure that waiting does not mend: the unit is left as
// it is (on disk, logged at level) until the next start.
type permanent struct {
	level slog.Level
	err   error
}

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

const (
	slogDebug = slog.LevelDebug
	slogWarn  = slog.LevelWarn
	slogError = slog.LevelError
)

// shipUnit ships u's files and then deletes them locally, retrying with
// back-off until that is done, the failure is one that waiting does not
// mend (a conflict, a file gone or held: logged, left as it is), or hard
// ends; only then does it return false: the unit is left for the next
// start.
func (s *Shipper) shipUnit(hard context.Context, u Unit) (settled bool) {
	wait := s.opts.RetryMin
	for {
		err := s.tryUnit(hard, u)
		if err == nil {
			return true
		}
		var p *permanent
		if errors.As(err, &p) {
			s.log.Log(hard, p.level, "not shipped", "file", u.Path, "err", err)
			return true
		}
		if hard.Err() != nil {
			return false
		}
		s.log.Warn("shipping failed, will try again", "file", u.Path, "in", wait, "err", err)
		if !s.pause(hard, &wait) {
			return false
		}
	}
}

// tryUnit ships every file of u that is not shipped yet, then removes
// them locally (unless KeepLocal).
func (s *Shipper) tryUnit(ctx context.Context, u Unit) error {
	if err := s.shipFile(ctx, u.Path, u.Kind, !u.Recovered); err != nil {
		return err
	}
	for _, c := range u.With {
		if _, err := os.Stat(c.Path); errors.Is(err, fs.ErrNotExist) {
			if s.shippedBefore(c.Path, c.Kind) {
				continue
			}
			return &permanent{level: slogWarn, err: fmt.Errorf("%s kept: its %s %s was not written", u.Path, c.Kind, filepath.Base(c.Path))}
		}
		if err := s.shipFile(ctx, c.Path, c.Kind, !u.Recovered); err != nil {
			return err
		}
	}
	if !s.opts.KeepLocal {
		for _, c := range u.With {
			s.remove(c.Path)
		}
		s.remove(u.Path)
	}
	if err := s.notify(ctx, u.Path, u.Kind); err != nil {
		return err
	}
	for _, c := range u.With {
		if err := s.notify(ctx, c.Path, c.Kind); err != nil {
			return err
		}
	}
	return nil
}

// notify sends the completion event of the file at path, unless its
// state says it was acknowledged, and notes the acknowledgement.
func (s *Shipper) notify(ctx context.Context, path, kind string) error {
	if s.opts.Notifier == nil {
		return nil
	}
	_, rel := s.key(path, kind)
	sp := statePath(s.opts.Dir, rel)
	st, ok, err := readState(sp)
	if err != nil || !ok || st.EventSent || st.Event == nil {
		return err
	}
	if err := s.opts.Notifier.Notify(ctx, *st.Event); err != nil {
		s.metrics.event(false)
		return err
	}
	s.metrics.event(true)
	st.EventSent = true
	return writeState(sp, st)
}

// shipFile ships one file: locked, hashed, compared with what the store
// holds under its key, uploaded when absent, confirmed by HeadObject, and
// its state written. A file already shipped (its state says so) is done.
func (s *Shipper) shipFile(ctx context.Context, path, kind string, completed bool) error {
	key, rel := s.key(path, kind)
	sp := statePath(s.opts.Dir, rel)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if s.shippedBefore(path, kind) {
			return nil
		}
		return &permanent{level: slogWarn, err: fmt.Errorf("gone before it was shipped: %w", err)}
	}
	if err != nil {
		return &permanent{level: slogError, err: err}
	}
	defer f.Close()
	if err := lock(f); err != nil {
		return &permanent{level: slogDebug, err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		return &permanent{level: slogError, err: err}
	}
	if st, ok, _ := readState(sp); ok && st.Key == key && st.Size == fi.Size() {
		return nil // shipped; a crash came before the local copy was removed
	}
	start := time.Now()
	d, err := describe(f, kind == KindWARC && s.opts.Notifier != nil)
	if err != nil {
		s.metrics.failed(ReasonLocal)
		return &permanent{level: slogError, err: err}
	}
	sum := d.sha256
	existed, err := s.upload(ctx, f, key, fi.Size(), Sums{SHA256: sum, CRC32: d.crc32})
	if err != nil {
		return err
	}
	st := State{Kind: kind, Path: path, Key: key, URL: s.opts.Target.URL(key), Target: s.opts.Target.String(), Size: fi.Size(), SHA256: sum,
		Shipped: time.Now().UTC(), EventSent: s.opts.Notifier == nil}
	if s.opts.Notifier != nil {
		st.Event = s.event(st, d, completed)
	}
	if err := writeState(sp, st); err != nil {
		s.metrics.failed(ReasonLocal)
		return err
	}
	if !existed {
		s.metrics.shipped(kind, fi.Size(), time.Since(start))
	}
	s.log.Info("shipped", "file", path, "url", st.URL, "bytes", fi.Size(), "sha256", sum,
		"already_there", existed, "completed", completed)
	return nil
}

// upload puts the file under key unless the same object is there, and
// confirms it by HeadObject. existed says the store had it already.
func (s *Shipper) upload(ctx context.Context, f *os.File, key string, size int64, sums Sums) (existed bool, err error) {
	sum := sums.SHA256
	obj, err := s.opts.Store.Head(ctx, key)
	switch {
	case err == nil && obj.Size == size && obj.SHA256 == sum:
		return true, nil
	case err == nil:
		s.metrics.failed(ReasonConflict)
		return false, &permanent{level: slogError, err: fmt.Errorf(
			"conflict: %s holds another object (%d bytes, sha256 %q; the file has %d bytes, sha256 %s): not overwritten, the file is kept",
			s.opts.Target.URL(key), obj.Size, obj.SHA256, size, sum)}
	case !errors.Is(err, ErrNotFound):
		s.metrics.failed(Reason(err))
		return false, fmt.Errorf("asking the store for %s: %w", key, err)
	}
	err = s.opts.Store.Put(ctx, key, f, size, sums)
	if errors.Is(err, errChecksumsOff) {
		s.warned.Do(func() { s.log.Warn(err.Error()) })
		err = nil
	}
	if err != nil {
		s.metrics.failed(Reason(err))
		return false, fmt.Errorf("uploading %s: %w", key, err)
	}
	obj, err = s.opts.Store.Head(ctx, key)
	if err != nil {
		s.metrics.failed(Reason(err))
		return false, fmt.Errorf("confirming %s: %w", key, err)
	}
	if obj.Size != size || obj.SHA256 != sum {
		s.metrics.failed(ReasonVerify)
		return false, fmt.Errorf("confirming %s: the store has %d bytes, sha256 %q, not %d bytes, sha256 %s",
			key, obj.Size, obj.SHA256, size, sum)
	}
	return false, nil
}

// key is the object key of path, and its name relative to the target's
// prefix: a WARC's or CDXJ's path relative to --dir; a crawl log's name
// under crawl-logs/.
func (s *Shipper) key(path, kind string) (key, rel string) {
	if kind == KindCrawlLog {
		rel = "crawl-logs/" + filepath.Base(path)
	} else if r, err := filepath.Rel(s.opts.Dir, path); err == nil && !strings.HasPrefix(r, "..") {
		rel = filepath.ToSlash(r)
	} else {
		rel = filepath.Base(path)
	}
	return s.opts.Target.Key(rel), rel
}

// shippedBefore reports whether path's state says it was shipped.
func (s *Shipper) shippedBefore(path, kind string) bool {
	_, rel := s.key(path, kind)
	_, ok, _ := readState(statePath(s.opts.Dir, rel))
	return ok
}

func (s *Shipper) remove(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error("removing a shipped file", "file", path, "err", err)
	}
}

// event is the completion event of a file shipped as st.
func (s *Shipper) event(st State, d description, completed bool) *Event {
	e := &Event{ID: eventID(st.Key, st.SHA256), Kind: st.Kind, Filename: filepath.Base(st.Path), Key: st.Key,
		URL: st.URL, Size: st.Size, SHA256: st.SHA256, Hash: st.SHA256, Records: d.records,
		FirstDate: d.firstDate, LastDate: d.lastDate, Completed: completed}
	if st.Kind == KindWARC && s.opts.PrefixOf != nil {
		e.WARCPrefix = s.opts.PrefixOf(st.Path)
	}
	return e
}
