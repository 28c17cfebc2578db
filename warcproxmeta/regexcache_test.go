package warcproxmeta

import (
	"fmt"
	"runtime"
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

// TestRegexCacheMemory: the cache does not keep what a client's patterns
// cost to compile without bound. A short pattern may compile to a large
// program (`[\p{L}\p{N}]{1000}`, 18 bytes, takes 49 KB), so a client that
// sends ever new such patterns, each request's memory released before,
// would pin hundreds of MB (4,096 of them: gigabytes).
func TestRegexCacheMemory(t *testing.T) {
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var p Parser
	before := heap()
	big := strings.Repeat(`[\\p{L}\\p{N}]{1000}`, 17) // about 850 KB compiled
	for i := range 12 {
		_, err := p.Parse(fmt.Sprintf(`{"blocks":[{"regex":"%s%d"}]}`, big, i))
		require.NoError(t, err)
	}
	grown := int64(heap()) - int64(before)
	require.Less(t, grown, int64(5<<20), "heap grown by %d MB after the requests", grown>>20)
}

// TestRegexCacheBudget: regexes small enough to keep, but many, stay
// within the cache's size.
func TestRegexCacheBudget(t *testing.T) {
	var p Parser
	re, err := p.compileFull("x")
	require.NoError(t, err)
	for i := range 200 {
		p.keep(fmt.Sprint("pattern", i), re, maxCachedRegexSize)
	}
	require.NotEmpty(t, p.m)
	require.LessOrEqual(t, p.insts, maxCachedInsts)
}
