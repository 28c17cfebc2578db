package dedup

import (
	"context"
	"errors"
	"net"
	"time"
)

// cdxErrLogInterval spaces out the log lines about failing CDX lookups.
const cdxErrLogInterval = 10 * time.Second

// cdxError is a failed lookup and why, for the errors metric.
type cdxError struct {
	reason string
	err    error
}

func (e *cdxError) Error() string { return "cdx server lookup: " + e.reason + ": " + e.err.Error() }
func (e *cdxError) Unwrap() error { return e.err }

// Reasons a CDX lookup fails; the values of the errors metric's label.
const (
	reasonBusy      = "busy"         // no request slot free within the timeout
	reasonTimeout   = "timeout"      // the server did not answer in time
	reasonConnect   = "connect"      // connecting or talking to it failed
	reasonStatus    = "status"       // it answered something other than 200
	reasonBadAnswer = "bad_answer"   // the answer does not parse
	reasonTooLarge  = "too_large"    // the answer is longer than MaxAnswer
	reasonDigest    = "digest"       // the capture's digest is not SHA-1
	reasonOpen      = "circuit_open" // not asked: the server kept failing (circuit open)
)

var cdxReasons = []string{reasonBusy, reasonTimeout, reasonConnect, reasonStatus, reasonBadAnswer, reasonTooLarge, reasonDigest, reasonOpen}

// classify names the reason a request failed.
func classify(ctx context.Context, err error) *cdxError {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &cdxError{reasonTimeout, err}
	}
	return &cdxError{reasonConnect, err}
}

// fail counts a failed lookup and logs it, at most once per
// cdxErrLogInterval with the number of failures not logged since.
func (c *CDX) fail(uri string, err *cdxError) error {
	c.errs.Add(1)
	c.m.errors.WithLabelValues(err.reason).Inc()
	c.logMu.Lock()
	now := time.Now()
	logIt := now.Sub(c.lastErrLog) >= cdxErrLogInterval
	unlogged := c.unlogged
	if logIt {
		c.lastErrLog, c.unlogged = now, 0
	} else {
		c.unlogged++
	}
	c.logMu.Unlock()
	if logIt {
		c.log.Warn("cdx server dedup lookup failed: writing the full response",
			"url", uri, "reason", err.reason, "err", err.err, "failures_not_logged", unlogged)
	}
	return err
}
