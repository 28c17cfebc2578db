package warcproxmeta

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegexCacheShares: a block list sent with every request compiles each
// regex once; the next request's rule holds the same compiled regex.
func TestRegexCacheShares(t *testing.T) {
	header := `{"blocks":[{"regex":"^https?://tracker\\.example/.*"}]}`
	var p Parser
	a, err := p.Parse(header)
	require.NoError(t, err)
	b, err := p.Parse(header)
	require.NoError(t, err)
	require.Same(t, a.Blocks[0].regex, b.Blocks[0].regex)
}

// TestRegexCacheBudget: regexes small enough to keep, but many, stay
// within the cache's size.
func TestRegexCacheBudget(t *testing.T) {
	var p Parser
	re, insts, err := p.compileFull("x")
	require.NoError(t, err)
	require.Positive(t, insts)
	for i := range 200 {
		p.keep(fmt.Sprint("pattern", i), compiledRegex{re, maxRegexInsts})
	}
	require.NotEmpty(t, p.m)
	require.LessOrEqual(t, p.insts, maxCachedInsts)
}

// TestRegexBudget: a header's regexes may not cost more than a bound,
// one by one and all together: a short pattern may compile to a large
// program (`[\p{L}\p{N}]{1000}`, 18 bytes, about 1,000 instructions and
// 49 KB), and a header of 10,000 of them took 8 s and 650 MB to parse.
// They get a 400 naming the field; a crawl's usual block list passes.
func TestRegexBudget(t *testing.T) {
	big := `[\\p{L}\\p{N}]{1000}`
	rules := func(n int, pattern string) string {
		var rs []string
		for i := range n {
			rs = append(rs, fmt.Sprintf(`{"regex":"%s%d"}`, pattern, i))
		}
		return `{"blocks":[` + strings.Join(rs, ",") + `]}`
	}
	for _, tc := range []struct {
		name, header, want string
	}{
		{"one regex too large", rules(1, strings.Repeat(big, 20)), "instructions, more than the 16384 a regex may"},
		{"too many large regexes", rules(2000, big), "a header may use"},
		{"parent_url_regex counts too", `{"blocks":[{"parent_url_regex":"` + strings.Repeat(big, 20) + `"}]}`, "a regex may"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Parser
			_, err := p.Parse(tc.header)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, "blocks", e.Field)
			require.ErrorContains(t, err, tc.want)
		})
	}
	var p Parser
	_, err := p.Parse(rules(500, `^https?://[^/]*tracker\\.example\\.(com|net)/.*[?&](utm_[a-z]+|fbclid)=[\\w-]{1,64}.*$`))
	require.NoError(t, err, "500 ordinary URL regexes")
}
