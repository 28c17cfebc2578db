package capture

import (
	"context"

	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// CheckLimits checks the Warcprox-Meta limits and soft limits of a request
// for uri against the stats counters, before anything is fetched. It
// returns the first one reached, or nil; an error means the counters could
// not be read (the front end refuses the request rather than let it pass
// unchecked).
func (s *Stage) CheckLimits(ctx context.Context, uri string, meta *warcproxmeta.Meta) (*warcproxmeta.LimitReached, error) {
	if meta == nil || s.opts.Stats == nil || (len(meta.Limits) == 0 && len(meta.SoftLimits) == 0) {
		return nil, nil
	}
	ctx, cancel := s.storeContext(ctx)
	defer cancel()
	x, err := s.opts.Stats.CheckLimits(ctx, stats.Buckets(uri, meta), meta)
	if err != nil || x == nil {
		return nil, err
	}
	doc, err := x.Value.Doc(x.Name).MarshalJSON()
	if err != nil {
		doc = []byte("{}")
	}
	return &warcproxmeta.LimitReached{Soft: x.Soft, Key: x.Key, Limit: x.Limit.Value, Bucket: x.Name, Stats: doc}, nil
}
