package capture

import (
	"context"

	"github.com/warcproxy/warcproxy/stats"
	"github.com/warcproxy/warcproxy/warcproxmeta"
	"github.com/warcproxy/warcproxy/writer"
)

// What the stage answers before a fetch, while the front end admits a
// request: whether its warc-prefix can name files, and whether it has
// reached a limit.

// CheckPrefix reports why a Warcprox-Meta warc-prefix cannot name a WARC
// file series (a path separator, a leading dot, a control character, over
// 200 bytes), or nil. A client chooses it, so the writer's rule is asked
// before anything is fetched, not when the record is written.
func (s *Stage) CheckPrefix(prefix string) error { return writer.CheckPrefix(prefix) }

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
