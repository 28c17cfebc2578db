package capture

import (
	"regexp"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/warcproxmeta"
)

// unspecifiedDedupBucket is the dedup bucket of requests that name none
// (warcprox's name in its shared backends).
const unspecifiedDedupBucket = "__unspecified__"

// defaultDedupBuckets is shared by every request naming none; read only.
var defaultDedupBuckets = []string{unspecifiedDedupBucket}

// methodArchived applies --method-filter.
func (s *Stage) methodArchived(method string) bool {
	if len(s.opts.MethodFilter) == 0 {
		return true
	}
	for _, m := range s.opts.MethodFilter {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

// mimeFiltered applies Warcprox-Meta's mime-type-filters to a response's
// Content-Type as warcprox does: a REJECT filter whose regex matches at the
// start, or a LIMIT filter whose regex does not, means not archived.
func (s *Stage) mimeFiltered(meta *warcproxmeta.Meta, contentType string, has bool) bool {
	if meta == nil {
		return false
	}
	for _, f := range meta.MimeTypeFilters {
		switch f.Type {
		case "REJECT", "LIMIT":
		default:
			continue
		}
		if !has {
			if f.Type == "LIMIT" {
				return true
			}
			continue
		}
		re, err := s.filterRegexp(f.Regex)
		if err != nil {
			continue // warcprox skips a regex it cannot compile
		}
		m := re.MatchString(contentType)
		if (f.Type == "REJECT" && m) || (f.Type == "LIMIT" && !m) {
			return true
		}
	}
	return false
}

// filterRegexp compiles a mime-type filter anchored at the start, as
// Python's re.match applies it, with a small cache: crawlers send the same
// filters with every request.
func (s *Stage) filterRegexp(expr string) (*regexp.Regexp, error) {
	s.reMu.Lock()
	defer s.reMu.Unlock()
	if e, ok := s.reCache[expr]; ok {
		return e.re, e.err
	}
	re, err := regexp.Compile(`^(?:` + expr + `)`)
	if len(s.reCache) >= 256 {
		clear(s.reCache)
	}
	if s.reCache == nil {
		s.reCache = make(map[string]reEntry)
	}
	s.reCache[expr] = reEntry{re, err}
	return re, err
}

type reEntry struct {
	re  *regexp.Regexp
	err error
}

// isText is warcprox's test for --dedup-min-text-size.
func isText(mimeType string) bool {
	if strings.HasPrefix(mimeType, "text/") {
		return true
	}
	switch mimeType {
	case "application/xml", "application/javascript", "application/json",
		"application/xhtml+xml", "application/typescript", "image/svg+xml":
		return true
	}
	return false
}

// dedupBuckets returns the buckets to look a payload up in, in order, and
// those a new original is saved to.
func dedupBuckets(meta *warcproxmeta.Meta) (lookup, save []string) {
	if meta == nil || meta.DedupBuckets == nil {
		return defaultDedupBuckets, defaultDedupBuckets
	}
	for _, b := range meta.DedupBuckets {
		lookup = append(lookup, b.Name)
		if !b.ReadOnly {
			save = append(save, b.Name)
		}
	}
	return lookup, save
}

// dedupWanted applies --dedup-only-with-bucket to a request.
func (s *Stage) dedupWanted(meta *warcproxmeta.Meta) bool {
	return !s.opts.DedupOnlyWithBucket || (meta != nil && meta.DedupBuckets != nil)
}

// shouldDedup says whether an exchange's payload is looked up: a dedup
// store, a whole payload with a digest, a bucket if one is required, and
// larger than the minimum size for its kind.
func (s *Stage) shouldDedup(ex *Exchange) bool {
	if s.opts.Dedup == nil || ex.Payload.H == nil || ex.Truncated != "" || !s.dedupWanted(ex.Meta) {
		return false
	}
	min := s.opts.DedupMinBinarySize
	if isText(ex.mimeType) {
		min = s.opts.DedupMinTextSize
	}
	return ex.Payload.N > min
}

// inBlackout reports whether a duplicate is too close to its original to
// be written at all (--blackout-period): same URL, original younger than
// the period.
func (s *Stage) inBlackout(e *dedup.Entry, uri string) bool {
	if s.opts.BlackoutPeriod <= 0 || e.URL != uri {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, e.Date)
	if err != nil {
		return false
	}
	return time.Since(t) <= s.opts.BlackoutPeriod
}
