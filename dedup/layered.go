package dedup

import "context"

// Layered is the dedup index of a proxy started with --cdxserver-dedup: a
// lookup asks the local Index first (this crawl's originals, by digest and
// bucket, at memory or disk speed) and only when it finds nothing asks the
// archive's CDX server (earlier crawls, by URL and digest). Saves go to the
// local Index only; the CDX server is read only.
//
// Either part may be nil: with Local nil (--dedup-db none) it is warcprox's
// --cdxserver-dedup, where the CDX server is the only source and nothing is
// saved.
type Layered struct {
	Local  *Index
	Remote *CDX
}

// LookupURI returns the original of a payload captured at uri. A local hit
// comes with its bucket; a CDX hit with bucket "" and no record ID. A CDX
// failure is a miss (the CDX client has counted and logged it); a local
// failure is returned only when the CDX server has no hit either, so the
// capture is then written in full.
func (l *Layered) LookupURI(ctx context.Context, digest, uri string, buckets []string) (*Entry, string, error) {
	var localErr error
	if l.Local != nil {
		e, b, err := l.Local.LookupURI(ctx, digest, uri, buckets)
		if err == nil && e != nil {
			return e, b, nil
		}
		localErr = err
	}
	if l.Remote != nil {
		if e, _ := l.Remote.Lookup(ctx, digest, uri); e != nil {
			return e, "", nil
		}
	}
	return nil, "", localErr
}

// Prefetch starts the CDX server's query for uri ahead of Lookup (see
// CDX.Prefetch); without a CDX server it does nothing.
func (l *Layered) Prefetch(uri string) {
	if l.Remote != nil {
		l.Remote.Prefetch(uri)
	}
}

// Save remembers a new original in the local Index (nothing without one).
func (l *Layered) Save(digest string, buckets []string, e Entry) {
	l.Local.Save(digest, buckets, e)
}
