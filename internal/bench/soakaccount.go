package bench

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"

	"github.com/nlnwa/gowarc/v3"
)

// soakCapture is one response (or revisit) record of a soak request.
type soakCapture struct {
	Truncated string // WARC-Truncated, "" when whole
}

// KindCount is the accounting of one outcome kind.
type KindCount struct {
	Exchanges  int64 // requests that ended so
	Recorded   int64 // of them, with exactly one capture record as expected
	Missing    int64 // expected a record, found none
	Duplicates int64 // extra records beyond the first
	WrongTrunc int64 // whole but marked truncated, or cut but not marked
	Unexpected int64 // recorded though the kind is not (proxy errors), or more often than sent
	// Without a response at the client: records the proxy wrote all the
	// same (it had the origin's head but aborted before sending it on),
	// truncated and at most one per attempt. Allowed; shown apart.
	RecordedNoHead int64
	Retried        int64 // sent more than once by the client's transport
}

// Accounting compares what clients saw with what the WARCs hold.
type Accounting struct {
	Kinds   map[string]*KindCount
	Unknown int64 // records of URIs no request had (or without a soak id)
}

// Exact reports whether every exchange is where it should be.
func (a *Accounting) Exact() bool {
	if a.Unknown > 0 {
		return false
	}
	for _, k := range a.Kinds {
		if k.Missing+k.Duplicates+k.WrongTrunc+k.Unexpected > 0 {
			return false
		}
	}
	return true
}

// Total sums a field over the kinds.
func (a *Accounting) Total(f func(*KindCount) int64) int64 {
	var n int64
	for _, k := range a.Kinds {
		n += f(k)
	}
	return n
}

// Account checks outcomes (by request id) against the captures found
// per id: whole exchanges once and not truncated, client aborts and origin
// cuts once and truncated, proxy errors not at all, and requests whose
// client saw no response at most once per attempt and truncated (those
// cut by an interrupt: at most once per attempt, truncated or not). unknown
// is the count of records matching no request.
func Account(outcomes map[uint64]soakOutcome, captures map[uint64][]soakCapture, unknown int64) *Accounting {
	a := &Accounting{Kinds: map[string]*KindCount{}, Unknown: unknown}
	for _, k := range soakOutcomes {
		a.Kinds[k] = &KindCount{}
	}
	for id, o := range outcomes {
		k := a.Kinds[o.Kind]
		if k == nil {
			k = &KindCount{}
			a.Kinds[o.Kind] = k
		}
		k.Exchanges++
		if o.Attempts > 1 {
			k.Retried++
		}
		accountOne(k, o, captures[id])
	}
	for id, caps := range captures {
		if _, ok := outcomes[id]; !ok {
			a.Unknown += int64(len(caps))
		}
	}
	return a
}

// accountOne tallies one exchange's captures into k.
func accountOne(k *KindCount, o soakOutcome, caps []soakCapture) {
	switch o.Kind {
	case OutProxyError:
		k.Unexpected += int64(len(caps))
		return
	case OutInterrupted:
		if len(caps) > max(o.Attempts, 1) {
			k.Unexpected += int64(len(caps) - max(o.Attempts, 1))
		}
		return
	case OutNoResponse:
		for i, c := range caps {
			if i >= max(o.Attempts, 1) || c.Truncated == "" {
				k.Unexpected++
			} else {
				k.RecordedNoHead++
			}
		}
		return
	}
	if len(caps) == 0 {
		k.Missing++
		return
	}
	k.Duplicates += int64(len(caps) - 1)
	if truncated := caps[0].Truncated != ""; truncated != (o.Kind != OutWhole) {
		k.WrongTrunc++
	} else if len(caps) == 1 {
		k.Recorded++
	}
}

// soakID is the soak= query value of a WARC-Target-URI.
func soakID(uri string) (uint64, bool) {
	u, err := url.Parse(uri)
	if err != nil {
		return 0, false
	}
	id, err := strconv.ParseUint(u.Query().Get("soak"), 10, 64)
	return id, err == nil && id > 0
}

// readSoakFile adds the response and revisit records of one WARC file to
// captures, by soak id; it returns the number without one.
func readSoakFile(path string, captures map[uint64][]soakCapture) (unknown int64, err error) {
	r, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithNoValidation())
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return unknown, nil
		}
		if err != nil {
			return unknown, fmt.Errorf("reading %s at %d: %w", path, rec.Offset, err)
		}
		if w := rec.WarcRecord; w != nil && (w.Type() == gowarc.Response || w.Type() == gowarc.Revisit) {
			h := w.WarcHeader()
			if id, ok := soakID(h.Get(gowarc.WarcTargetURI)); ok {
				captures[id] = append(captures[id], soakCapture{Truncated: h.Get(gowarc.WarcTruncated)})
			} else {
				unknown++
			}
		}
		_ = rec.Close()
	}
}
