package dedupimport

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/digest"
)

// warcRecord is one record of an uncompressed WARC file.
func warcRecord(typ, id, uri, payloadDigest, block string) string {
	h := fmt.Sprintf("WARC/1.0\r\nWARC-Type: %s\r\nWARC-Record-ID: %s\r\nWARC-Date: 2024-01-02T03:04:05.123456Z\r\n", typ, id)
	if uri != "" {
		h += "WARC-Target-URI: " + uri + "\r\n"
	}
	if payloadDigest != "" {
		h += "WARC-Payload-Digest: " + payloadDigest + "\r\n"
	}
	return h + fmt.Sprintf("Content-Type: application/http; msgtype=response\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n", len(block), block)
}

// TestImportWARCDigests: a record's digest is taken as written when it is
// of the proxy's algorithm (normalised to its base32 or hex), and
// otherwise recomputed over the payload as the proxy digests it: without
// the chunked transfer coding.
func TestImportWARCDigests(t *testing.T) {
	body := "hello, archive"
	sum := sha1.Sum([]byte(body))
	plain := "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n" + body
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n9\r\n, archive\r\n0\r\n\r\n"
	sha256Of := digest.SHA256.Of([]byte(body), true)
	tests := []struct {
		name       string
		record     string
		base32     bool
		recomputed int64
		skip       string
	}{
		{"sha1 base32", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", digest.SHA1.Of([]byte(body), true), plain), true, 0, ""},
		{"sha1 hex into base32", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", "sha1:"+hex.EncodeToString(sum[:]), plain), true, 0, ""},
		{"sha1 base32 into hex", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", digest.SHA1.Of([]byte(body), true), plain), false, 0, ""},
		{"sha256: recomputed", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", sha256Of, plain), true, 1, ""},
		{"sha256, chunked: recomputed without the chunks", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", sha256Of, chunked), true, 1, ""},
		{"no digest: computed", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", "", plain), true, 1, ""},
		{"revisit", warcRecord("revisit", "<urn:uuid:1>", "http://ex.com/", digest.SHA1.Of([]byte(body), true), "HTTP/1.1 200 OK\r\n\r\n"), true, 0, SkipRevisit},
		{"empty payload", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", digest.SHA1.Of(nil, true), "HTTP/1.1 204 No Content\r\n\r\n"), true, 0, SkipEmpty},
		{"empty payload, recomputed", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", sha256Of, "HTTP/1.1 204 No Content\r\n\r\n"), true, 0, SkipEmpty},
		{"bad digest", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", "sha1:???", plain), true, 0, SkipBadDigest},
		{"bad chunks", warcRecord("response", "<urn:uuid:1>", "http://ex.com/", sha256Of, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), true, 0, SkipBadPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.warc")
			other := warcRecord("request", "<urn:uuid:2>", "http://ex.com/", "", "GET / HTTP/1.1\r\n\r\n")
			require.NoError(t, os.WriteFile(p, []byte(tc.record+other), 0o644))
			ins, err := CheckInputs([]string{p})
			require.NoError(t, err)
			var s dedupstest.MemStore
			got, err := Import(context.Background(), &s, ins, Options{Bucket: "b", Digest: digest.SHA1, Base32: tc.base32})
			require.NoError(t, err)
			require.EqualValues(t, 1, got.Read, "the request record is not read as a capture")
			require.Equal(t, tc.recomputed, got.Recomputed)
			if tc.skip != "" {
				require.Equal(t, map[string]int64{tc.skip: 1}, got.Skipped)
				require.Zero(t, s.Len())
				return
			}
			e, err := s.Lookup(context.Background(), []dedup.Key{{Digest: digest.SHA1.Format(sum[:], tc.base32), Bucket: "b"}})
			require.NoError(t, err)
			require.Equal(t, &dedup.Entry{ID: "<urn:uuid:1>", URL: "http://ex.com/", Date: "2024-01-02T03:04:05.123456Z"}, e[0],
				"the entry, under the digest in the proxy's form")
		})
	}
}
