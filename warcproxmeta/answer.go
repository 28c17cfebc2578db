package warcproxmeta

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
)

// LimitReached is a limit (or soft limit) a request ran into, as warcprox
// reports it to the crawler: "420 Reached limit" or "430 Reached soft
// limit" with a Warcprox-Meta response header naming the bucket's counters
// and the limit.
type LimitReached struct {
	Soft   bool            // from "soft-limits" (430) rather than "limits" (420)
	Key    string          // the limit's key, e.g. "job1/total/urls"
	Limit  int64           // the limit's value
	Bucket string          // the bucket, to echo under "stats"
	Stats  json.RawMessage // the bucket's counters as warcprox shows them
}

// Status is the HTTP status code and reason phrase of the answer.
func (x *LimitReached) Status() (int, string) {
	if x.Soft {
		return 430, "Reached soft limit"
	}
	return 420, "Reached limit"
}

// Header is the answer's Warcprox-Meta value:
// {"stats":{BUCKET:DOC},"reached-limit":{KEY:N}}.
func (x *LimitReached) Header() string {
	field := "reached-limit"
	if x.Soft {
		field = "reached-soft-limit"
	}
	doc := []byte(x.Stats)
	if len(doc) == 0 {
		doc = []byte("{}")
	}
	name, _ := json.Marshal(x.Bucket)
	key, _ := json.Marshal(x.Key)
	return ASCIIJSON([]byte(fmt.Sprintf(`{"stats":{%s:%s},%q:{%s:%d}}`, name, doc, field, key, x.Limit)))
}

// Body is warcprox's text body of the answer.
func (x *LimitReached) Body() string {
	what := "limit"
	if x.Soft {
		what = "soft limit"
	}
	return fmt.Sprintf("request rejected by warcprox: reached %s %s=%d\n", what, x.Key, x.Limit)
}

// BlockedHeader is the Warcprox-Meta value of a 403 for a block rule:
// {"blocked-by-rule": RULE}, the rule as the crawler sent it.
func BlockedHeader(rule *Rule) string {
	return `{"blocked-by-rule":` + ASCIIJSON(rule.Raw) + `}`
}

// ASCIIJSON escapes everything but printable ASCII in compact JSON as
// \uXXXX (as Python's json.dumps does for warcprox), so that it is a valid
// header value whatever a compressed_blocks rule held.
func ASCIIJSON(raw []byte) string {
	var b strings.Builder
	for _, r := range string(raw) {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
