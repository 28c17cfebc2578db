package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// dedupLive is the state the progress line shows: a phase, how far it
// is, and since when.
type dedupLive struct {
	mu     sync.Mutex
	label  string
	since  time.Time
	from   int64
	target int64
	done   atomic.Int64 // counted from `from`
}

func newDedupLive() *dedupLive { return &dedupLive{since: time.Now()} }

// set starts a phase that counts from `from` to target (0: no target).
func (l *dedupLive) set(label string, from, target int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.label, l.since, l.from, l.target = label, time.Now(), from, target
	l.done.Store(0)
}

// line is the progress line: phase, count, rate over the phase and ETA.
func (l *dedupLive) line(now time.Time) string {
	l.mu.Lock()
	label, since, from, target := l.label, l.since, l.from, l.target
	l.mu.Unlock()
	done := l.done.Load()
	el := now.Sub(since).Seconds()
	s := label
	if target == 0 {
		return s
	}
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	s += fmt.Sprintf(": %s/%s  %s/s", FormatCount(from+done), FormatCount(target), FormatCount(int64(rate)))
	if left := target - from - done; rate > 0 && left > 0 {
		s += "  ETA " + time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second).String()
	}
	return s
}

// report writes the line each second until the returned stop is called,
// which clears it.
func (l *dedupLive) report(w io.Writer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				_, _ = fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				_, _ = fmt.Fprint(w, "\r\033[K"+l.line(now))
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// FormatCount writes n with a k, M or G suffix when it is a round number
// of them (20k, 1M, 1.5M), else as digits: the form --sizes takes.
func FormatCount(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if n >= u.mult && n%(u.mult/10) == 0 {
			return strconv.FormatFloat(float64(n)/float64(u.mult), 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseCount reads a count with an optional decimal suffix: 20000, 20k,
// 1M, 1.5M, 1G.
func ParseCount(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"), strings.HasSuffix(t, "K"):
		mult = 1e3
	case strings.HasSuffix(t, "M"), strings.HasSuffix(t, "m"):
		mult = 1e6
	case strings.HasSuffix(t, "G"), strings.HasSuffix(t, "g"):
		mult = 1e9
	}
	if mult > 1 {
		t = t[:len(t)-1]
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || f*mult > 1e12 || f*mult != float64(int64(f*mult)) {
		return 0, fmt.Errorf("bad count %q: want a positive whole number, optionally with k, M or G (20k, 1M)", s)
	}
	return int64(f * mult), nil
}

// ClearLine returns a writer that clears the terminal's line before each
// write to w, so that a log line does not run on from a progress line.
func ClearLine(w io.Writer) io.Writer { return lineClearer{w} }

type lineClearer struct{ w io.Writer }

func (c lineClearer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, "\r\033[K"); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
