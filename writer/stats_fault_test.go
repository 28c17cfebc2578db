package writer

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// logBuffer collects what a pool logs, for assertions, and passes it on to
// t.Log.
type logBuffer struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.t.Helper()
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStatsFailingRun: while writes fail, Stats shows since when and why
// (FailingSince, FailingError) next to the counters, the log says the
// capture will be retried, and once a capture is written again the run is
// over; the capture that waited is written exactly once.
func TestStatsFailingRun(t *testing.T) {
	tests := []struct {
		name      string
		op        string
		err, then syscall.Errno // then: the error the run goes on with
	}{
		{"ENOSPC on write", "write", syscall.ENOSPC, syscall.EIO},
		{"EIO on write", "write", syscall.EIO, syscall.ENOSPC},
		{"ENOSPC on create", "open", syscall.ENOSPC, syscall.EIO},
		{"EIO on create", "open", syscall.EIO, syscall.ENOSPC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := newFaultFS()
			logs := &logBuffer{t: t}
			o := Options{Dir: t.TempDir(), FS: fsys, Workers: 1, Compression: warcscan.Gzip, Hostname: "crawler1.example.org"}
			o.backoffMin, o.backoffMax = time.Millisecond, 5*time.Millisecond
			p, err := New(o, slog.New(slog.NewTextHandler(logs, nil)).With("component", "writer"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close(t.Context()) })
			tr := newTracker()
			capture := func(i int) *Capture {
				// Capture 1 has a prefix of its own, so it needs a new
				// file: create faults hit it too.
				return makeCapture(t, captureSpec{
					uri: fmt.Sprintf("http://example.org/%d", i), bodySize: 2000, seed: uint64(i),
					prefix: []string{"a", "b"}[min(i, 1)],
				}, tr)
			}

			enqueueAll(t, p, capture(0))
			require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 1 }, 10*time.Second, time.Millisecond)
			s := p.Stats()
			require.Zero(t, s.WriteErrors)
			require.Nil(t, s.LastWriteError)
			require.True(t, s.FailingSince.IsZero(), "not failing before any error")
			require.Empty(t, s.FailingError)

			before := time.Now()
			fsys.set(tt.op, fault{fail: 1 << 30, err: tt.err})
			enqueueAll(t, p, capture(1))
			require.Eventually(t, func() bool { return p.Stats().WriteErrors >= 3 }, 10*time.Second, time.Millisecond)
			s = p.Stats()
			require.False(t, s.FailingSince.IsZero(), "failing")
			require.False(t, s.FailingSince.Before(before), "the run began after the fault: %v < %v", s.FailingSince, before)
			require.False(t, s.LastWriteErrorAt.Before(s.FailingSince))
			require.Contains(t, s.FailingError, tt.err.Error())
			require.ErrorIs(t, s.LastWriteError, tt.err)
			require.Equal(t, uint64(1), s.CapturesWritten, "nothing written while failing")
			since := s.FailingSince

			// Another error without a write in between: the same run, the
			// latest error.
			fsys.set(tt.op, fault{fail: 1 << 30, err: tt.then})
			require.Eventually(t, func() bool {
				return strings.Contains(p.Stats().FailingError, tt.then.Error())
			}, 10*time.Second, time.Millisecond)
			s = p.Stats()
			require.Equal(t, since, s.FailingSince, "one run while nothing is written")
			require.ErrorIs(t, s.LastWriteError, tt.then)

			require.Contains(t, logs.String(), "writing warc file failed, retrying")
			require.Contains(t, logs.String(), tt.err.Error())
			require.Contains(t, logs.String(), "retry_in=")

			// Writes go through again: the capture is written, the run is
			// over, the last error stays for the record.
			fsys.set(tt.op, fault{})
			require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 2 }, 10*time.Second, time.Millisecond)
			s = p.Stats()
			require.True(t, s.FailingSince.IsZero(), "a written capture ends the run")
			require.Empty(t, s.FailingError)
			require.ErrorIs(t, s.LastWriteError, tt.then)
			require.Equal(t, uint64(2), s.CapturesWritten)
			errs := s.WriteErrors

			// A later failure starts a new run.
			recovered := time.Now()
			fsys.set(tt.op, fault{fail: 1, err: tt.err})
			enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/2", bodySize: 2000, seed: 2, prefix: "c"}, tr))
			require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 3 }, 10*time.Second, time.Millisecond)
			s = p.Stats()
			require.Equal(t, errs+1, s.WriteErrors)
			require.False(t, s.LastWriteErrorAt.Before(recovered))
			require.True(t, s.FailingSince.IsZero())

			closePool(t, p)
			tr.requireAll(t, 3, nil)
			checkFiles(t, o.Dir, 3)
		})
	}
}

// TestStatsFailingWithPartialWrites: a write that gets part of its bytes
// out before ENOSPC is cut back and retried; the run lasts until the
// capture is written, and the file holds it once.
func TestStatsFailingWithPartialWrites(t *testing.T) {
	fsys := newFaultFS() // its failing writes write half their bytes first
	o := Options{FS: fsys, Workers: 1, Compression: warcscan.Gzip}
	o.backoffMin, o.backoffMax = time.Millisecond, 5*time.Millisecond
	p, dir := newPool(t, o)
	tr := newTracker()
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/0", bodySize: 5000, seed: 0}, tr))
	require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 1 }, 10*time.Second, time.Millisecond)

	fsys.set("write", fault{fail: 1 << 30, err: syscall.ENOSPC})
	enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/1", bodySize: 5000, seed: 1}, tr))
	require.Eventually(t, func() bool {
		s := p.Stats()
		return s.WriteErrors >= 3 && !s.FailingSince.IsZero()
	}, 10*time.Second, time.Millisecond)
	require.Contains(t, p.Stats().FailingError, "no space left on device")

	fsys.set("write", fault{})
	require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 2 }, 10*time.Second, time.Millisecond)
	require.True(t, p.Stats().FailingSince.IsZero())
	closePool(t, p)
	tr.requireAll(t, 2, nil)
	checkFiles(t, dir, 2)
}

// TestSerialsWithoutGaps: a file that could not be made, or whose first
// write failed (a full disk), does not use up a serial number: the file
// written once the disk has room again is number 00000, so an archive's
// check for missing files finds no gap.
func TestSerialsWithoutGaps(t *testing.T) {
	for _, op := range []string{"open", "write"} {
		t.Run(op, func(t *testing.T) {
			fsys := newFaultFS()
			o := Options{Dir: t.TempDir(), FS: fsys, Workers: 1, Compression: warcscan.Gzip, Hostname: "crawler1.example.org"}
			o.backoffMin, o.backoffMax = time.Millisecond, 2*time.Millisecond
			p, err := New(o, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			fsys.set(op, fault{fail: 5, err: syscall.ENOSPC})
			tr := newTracker()
			enqueueAll(t, p, makeCapture(t, captureSpec{uri: "http://example.org/", bodySize: 2000, prefix: "a"}, tr))
			require.Eventually(t, func() bool { return p.Stats().CapturesWritten == 1 }, 10*time.Second, time.Millisecond)
			require.GreaterOrEqual(t, p.Stats().WriteErrors, uint64(5))
			closePool(t, p)
			names, err := filepath.Glob(filepath.Join(o.Dir, "a-*.warc.gz"))
			require.NoError(t, err)
			require.Len(t, names, 1)
			require.Contains(t, filepath.Base(names[0]), "-00000-", "the first file kept is number 0")
		})
	}
}
