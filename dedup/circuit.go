package dedup

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStoreUnavailable is a lookup not even asked: the store failed or did
// not answer in time several times in a row, and the circuit is open.
var ErrStoreUnavailable = errors.New("dedup store unavailable: lookups skipped for a while after repeated failures")

// Circuit states, as /status shows them and warcproxy_dedup_store_up reads.
const (
	circuitClosed  = "closed"  // lookups go to the store
	circuitOpen    = "open"    // lookups are skipped until the cool-down ends
	circuitProbing = "probing" // one lookup is testing the store
)

const (
	circuitTrips       = 3 // failures in a row that open the circuit
	circuitMinCooldown = time.Second
	circuitMaxCooldown = 30 * time.Second
)

// circuit stops lookups from waiting on a store that is down or hung:
// after circuitTrips failures in a row (errors or lookups that ran out of
// time) it opens for a cool-down, doubling up to circuitMaxCooldown while
// the store keeps failing; then one lookup probes the store, and its
// success closes the circuit again.
//
// It sits on every lookup's path: while the store answers (no failure
// since the last success) allow and result read one atomic and take no
// lock and no clock.
type circuit struct {
	failing atomic.Bool // a failure since the last success: take the lock

	mu        sync.Mutex
	fails     int
	openUntil time.Time
	cooldown  time.Duration
	probing   bool
}

// allow reports whether a lookup may ask the store now.
func (c *circuit) allow() bool {
	if !c.failing.Load() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.openUntil.IsZero():
		return true
	case time.Now().Before(c.openUntil) || c.probing:
		return false
	}
	c.probing = true
	return true
}

// result records how a lookup that was allowed went.
func (c *circuit) result(err error) {
	if err == nil && !c.failing.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.fails, c.cooldown, c.probing, c.openUntil = 0, 0, false, time.Time{}
		c.failing.Store(false)
		return
	}
	c.failing.Store(true)
	c.fails++
	if c.probing || c.fails >= circuitTrips {
		c.cooldown = min(max(2*c.cooldown, circuitMinCooldown), circuitMaxCooldown)
		c.openUntil = time.Now().Add(c.cooldown)
		c.probing = false
	}
}

// release ends a probe that never reached the store (no request slot was
// free), so that another lookup may probe.
func (c *circuit) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probing = false
}

// state is closed, open or probing.
func (c *circuit) state() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.openUntil.IsZero():
		return circuitClosed
	case c.probing || !time.Now().Before(c.openUntil):
		return circuitProbing
	}
	return circuitOpen
}
