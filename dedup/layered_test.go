package dedup_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/testutil/cdxserver"
)

// TestLayered: the local index answers first, with its buckets; the CDX
// server answers what it does not know, by URL; saves stay local; a
// failing CDX server or local store is a miss or the local error.
func TestLayered(t *testing.T) {
	const u = "http://example.com/page"
	inArchive := "sha1:" + b32(sha1Of("archived"))
	srv := cdxserver.New(t, []cdxserver.Capture{
		{"urlkey": "com,example)/page", "timestamp": "20230405060708", "url": u, "mime": "text/html", "digest": b32(sha1Of("archived"))},
	})
	h := newHarness(t, dedup.Options{})
	cdx, _ := newCDX(t, srv.URL, func(o *dedup.CDXOptions) { o.CacheSize = -1 })
	l := &dedup.Layered{Local: h.ix, Remote: cdx}
	ctx := context.Background()

	// Only in the archive: a CDX hit, no record ID, bucket "".
	e, b, err := l.LookupURI(ctx, inArchive, u, []string{"b1"})
	require.NoError(t, err)
	require.Equal(t, &dedup.Entry{URL: u, Date: "2023-04-05T06:07:08Z"}, e)
	require.Empty(t, b)
	// Without a URL the CDX server cannot be asked.
	e, _, err = l.LookupURI(ctx, inArchive, "", []string{"b1"})
	require.NoError(t, err)
	require.Nil(t, e)

	// Saved in this crawl: the local entry wins, and the CDX server is
	// not asked.
	local := dedup.Entry{ID: "<urn:uuid:1>", URL: "http://example.com/other", Date: "2026-01-01T00:00:00Z"}
	l.Save(inArchive, []string{"b1"}, local)
	before := len(srv.Queries())
	e, b, err = l.LookupURI(ctx, inArchive, u, []string{"b1"})
	require.NoError(t, err)
	require.Equal(t, &local, e)
	require.Equal(t, "b1", b)
	require.Len(t, srv.Queries(), before)
	require.NoError(t, h.ix.Flush(ctx))
	require.NotNil(t, h.s.stored(t, inArchive, "b1"), "saves go to the local store")

	// Neither knows it.
	e, _, err = l.LookupURI(ctx, "sha1:"+b32(sha1Of("new")), u, nil)
	require.NoError(t, err)
	require.Nil(t, e)

	// The local store fails: the CDX server still answers; if it has
	// nothing, the local error is returned.
	h.s.onLookup(func([]dedup.Key) error { return errBoom })
	e, _, err = l.LookupURI(ctx, "sha1:"+b32(sha1Of("archived")), u, []string{"b2"})
	require.NoError(t, err)
	require.NotNil(t, e)
	_, _, err = l.LookupURI(ctx, "sha1:"+b32(sha1Of("new")), u, nil)
	require.ErrorIs(t, err, errBoom)
}

// TestLayeredCDXOnly: without a local index (--dedup-db none) the CDX
// server is the only source, saves are dropped, and a failing server is a
// plain miss, logged at most once per interval.
func TestLayeredCDXOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	logs := &logBuffer{}
	cdx, err := dedup.NewCDX(dedup.CDXOptions{URL: srv.URL, Timeout: time.Second}, slog.New(slog.NewJSONHandler(logs, nil)), prometheus.NewRegistry())
	require.NoError(t, err)
	l := &dedup.Layered{Remote: cdx}
	for i := range 5 {
		e, b, err := l.LookupURI(context.Background(), "sha1:"+b32(sha1Of("x")), "http://example.com/"+string(rune('a'+i)), nil)
		require.NoError(t, err, "a CDX failure is a miss")
		require.Nil(t, e)
		require.Empty(t, b)
	}
	l.Save("sha1:"+b32(sha1Of("x")), nil, dedup.Entry{ID: "<urn:uuid:1>"}) // no local index: nothing happens
	lines := logs.lines(t, "cdx server dedup lookup failed: writing the full response")
	require.Len(t, lines, 1, "rate-limited")
	require.Equal(t, "status", lines[0]["reason"])
	require.Equal(t, "http://example.com/a", lines[0]["url"])
	require.Equal(t, uint64(5), cdx.Status()["errors"])
}
