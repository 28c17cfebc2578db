package capture

import (
	"sync"
	"time"
)

// activeSet tracks the exchanges from their first byte until their
// capture is written, for warcprox's seconds_behind and
// earliest_still_active_fetch_start. It links the exchanges themselves (no
// allocation per request); starts arrive in time order, so the oldest is at
// the front.
type activeSet struct {
	mu         sync.Mutex
	head, tail *activeNode
	n          int
}

// activeNode is an exchange's place in the activeSet.
type activeNode struct {
	start      time.Time
	prev, next *activeNode
	in         bool
}

func (a *activeSet) add(n *activeNode, start time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n.start, n.prev, n.next, n.in = start, a.tail, nil, true
	if a.tail != nil {
		a.tail.next = n
	} else {
		a.head = n
	}
	a.tail = n
	a.n++
}

// remove takes n out; removing it twice, or a node never added, is a no-op.
func (a *activeSet) remove(n *activeNode) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !n.in {
		return
	}
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		a.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		a.tail = n.prev
	}
	n.prev, n.next, n.in = nil, nil, false
	a.n--
}

// len is the number of exchanges in the set.
func (a *activeSet) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// earliest returns the oldest start still active.
func (a *activeSet) earliest() (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head == nil {
		return time.Time{}, false
	}
	return a.head.start, true
}
