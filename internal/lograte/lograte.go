// Package lograte keeps repeated log lines (a hostile client's bad
// requests, a failing store) from flooding the log.
package lograte

import (
	"sync/atomic"
	"time"
)

// EverySecond lets a log line through at most once a second. The zero
// value is ready to use.
type EverySecond struct{ last atomic.Int64 }

// Allow reports whether a line may be logged now.
func (e *EverySecond) Allow() bool {
	now := time.Now().UnixNano()
	last := e.last.Load()
	return now-last >= int64(time.Second) && e.last.CompareAndSwap(last, now)
}
