// Package rates keeps moving averages of the proxy's throughput over the
// last 1, 5 and 15 minutes (warcprox's rates_1min/5min/15min), from
// counters sampled once a second.
package rates

import (
	"sync"
	"time"
)

// Sample is a reading of the cumulative counters.
type Sample struct {
	URLs, WARCBytes int64
}

type point struct {
	at time.Time
	s  Sample
}

// Tracker samples read once a second into a 15-minute ring.
type Tracker struct {
	read func() Sample
	mu   sync.Mutex
	ring []point // oldest first once full
	next int
	full bool
	stop chan struct{}
	done chan struct{}
}

const window = 15*60 + 1

// New returns a tracker; Start begins sampling.
func New(read func() Sample) *Tracker {
	return &Tracker{read: read, ring: make([]point, window)}
}

// Start samples now and then every second until Stop.
func (t *Tracker) Start() {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	t.add(time.Now())
	go func() {
		defer close(t.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case now := <-tick.C:
				t.add(now)
			case <-t.stop:
				return
			}
		}
	}()
}

// Stop ends sampling and waits for the sampler.
func (t *Tracker) Stop() {
	if t.stop != nil {
		close(t.stop)
		<-t.done
		t.stop = nil
	}
}

func (t *Tracker) add(now time.Time) {
	s := t.read()
	t.mu.Lock()
	t.ring[t.next] = point{at: now, s: s}
	t.next = (t.next + 1) % window
	if t.next == 0 {
		t.full = true
	}
	t.mu.Unlock()
}

// Rate is the average over a window.
type Rate struct {
	ActualElapsed   float64 `json:"actual_elapsed"`
	URLsPerSec      float64 `json:"urls_per_sec"`
	WARCBytesPerSec float64 `json:"warc_bytes_per_sec"`
}

// Over returns the average rate over the last d (or over what has been
// sampled, if less), from the sample at least d old (or the oldest) to a
// fresh reading now.
func (t *Tracker) Over(d time.Duration) Rate {
	now := time.Now()
	cur := t.read()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.next
	if t.full {
		n = window
	}
	if n == 0 {
		return Rate{}
	}
	// Walk back from the newest sample to the first one at least d old.
	base := t.ring[(t.next-1+window)%window]
	for i := 1; i <= n; i++ {
		p := t.ring[(t.next-i+window)%window]
		base = p
		if now.Sub(p.at) >= d {
			break
		}
	}
	el := now.Sub(base.at).Seconds()
	if el <= 0 {
		return Rate{}
	}
	return Rate{
		ActualElapsed:   el,
		URLsPerSec:      float64(cur.URLs-base.s.URLs) / el,
		WARCBytesPerSec: float64(cur.WARCBytes-base.s.WARCBytes) / el,
	}
}
