package stats

import (
	"context"
	"slices"

	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// Limits: Warcprox-Meta's limits and soft limits, checked against the
// buckets' current values before a request is fetched.

// Reached is a limit that a request would exceed.
type Reached struct {
	Limit warcproxmeta.Limit
	Soft  bool   // from "soft-limits" (answer 430) rather than "limits" (420)
	Key   string // the limit's key, domain normalised, to echo in "reached-limit" / "reached-soft-limit"
	Name  string // the bucket, domain normalised, to echo under "stats"
	Value Bucket // the bucket's current value
}

// CheckLimits checks the limits and then the soft limits of m, in order,
// as warcprox does before it connects upstream: a limit applies when its
// bucket is one of buckets (from Buckets for the request) and is reached
// when its value is positive and the counter is at least that value. It
// returns the first limit reached, or nil. An error means a bucket could
// not be read; the caller decides whether to let the request through.
func (t *Tracker) CheckLimits(ctx context.Context, buckets []string, m *warcproxmeta.Meta) (*Reached, error) {
	if m == nil {
		return nil, nil
	}
	var counted map[string]struct{} // for many buckets and limits (see linearSetMax)
	if len(buckets) > linearSetMax && len(m.Limits)+len(m.SoftLimits) > 1 {
		counted = make(map[string]struct{}, len(buckets))
		for _, b := range buckets {
			counted[b] = struct{}{}
		}
	}
	for _, set := range []struct {
		limits []warcproxmeta.Limit
		soft   bool
	}{{m.Limits, false}, {m.SoftLimits, true}} {
		for _, l := range set.limits {
			if l.Value <= 0 {
				continue
			}
			name, key := LimitBucket(l)
			if counted == nil {
				if !slices.Contains(buckets, name) {
					continue
				}
			} else if _, ok := counted[name]; !ok {
				continue
			}
			v, err := t.Get(ctx, name)
			if err != nil {
				return nil, err
			}
			if n, ok := v.Value(l.Category, l.Stat); ok && n >= l.Value {
				return &Reached{Limit: l, Soft: set.soft, Key: key, Name: name, Value: v}, nil
			}
		}
	}
	return nil, nil
}
