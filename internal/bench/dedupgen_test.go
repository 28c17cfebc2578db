package bench

import (
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEntryGenLooksLikeTheProxys checks the generated entries against the
// forms the proxy writes: what the dedup layout is measured on.
func TestEntryGenLooksLikeTheProxys(t *testing.T) {
	g := newEntryGen(1, dedupHostNames())
	digest := regexp.MustCompile(`^sha1:[A-Z2-7]{32}$`)
	id := regexp.MustCompile(`^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}>$`)
	seen := map[string]bool{}
	hosts := map[string]bool{}
	var prev time.Time
	for range 2000 {
		it := g.item()
		require.Regexp(t, digest, it.Key.Digest)
		require.False(t, seen[it.Key.Digest], "digests are fresh")
		seen[it.Key.Digest] = true
		require.Empty(t, it.Key.Bucket, "the default bucket")
		require.Regexp(t, id, it.Entry.ID)
		u, err := url.Parse(it.Entry.URL)
		require.NoError(t, err)
		require.Contains(t, []string{"http", "https"}, u.Scheme)
		hosts[u.Host] = true
		d, err := time.Parse(time.RFC3339, it.Entry.Date)
		require.NoError(t, err)
		require.Len(t, it.Entry.Date, len("2026-01-01T00:00:00Z"), "WARC/1.0 precision")
		require.True(t, d.After(prev))
		prev = d
	}
	require.Greater(t, len(hosts), 1000, "spread over thousands of hosts")
	require.InDelta(t, 100, meanURLLen(), 5)
}

func TestCountForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"20000", 20_000}, {"20k", 20_000}, {"1M", 1_000_000}, {"1.5M", 1_500_000}, {"10M", 10_000_000}, {" 2G ", 2_000_000_000},
	} {
		t.Run(c.in, func(t *testing.T) {
			n, err := ParseCount(c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, n)
			back, err := ParseCount(FormatCount(n))
			require.NoError(t, err)
			require.Equal(t, n, back, FormatCount(n))
		})
	}
	for _, bad := range []string{"", "0", "-5", "1.5", "1.0001k", "ten", "1T", "NaN", "1e13"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := ParseCount(bad)
			require.Error(t, err)
		})
	}
	require.Equal(t, "1234567", FormatCount(1_234_567))
	require.Equal(t, "999", FormatCount(999))
}
