package dedupimport

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedup/dedupstest"
	"github.com/warcproxy/warcproxy/internal/digest"
)

// TestImportCDXJ: each kind of index line, as warcproxy's --cdxj, warcio.js
// and pywb's cdxj-indexer write them, becomes an entry without a record
// ID, in the proxy's digest form, or is skipped for a reason the summary
// names.
func TestImportCDXJ(t *testing.T) {
	s1 := sha1.Sum([]byte("payload"))
	b32 := base32.StdEncoding.EncodeToString(s1[:])
	h := hex.EncodeToString(s1[:])
	s256 := sha256.Sum256([]byte("payload"))
	entry := &dedup.Entry{URL: "http://example.com/a?b=c", Date: "2024-01-02T03:04:05Z"}
	tests := []struct {
		name   string
		line   string
		base32 bool
		want   *dedup.Entry // under sha1 of "payload"
		skip   string
	}{
		{"warcproxy", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","mime":"text/html","status":"200","digest":"` + b32 + `","length":"900","offset":"0","filename":"a.warc.gz"}`, true, entry, ""},
		{"pywb, spaced, labelled", `com,example)/a?b=c 20240102030405 {"url": "http://example.com/a?b=c", "mime": "text/html", "status": "200", "digest": "sha1:` + b32 + `", "length": "900", "offset": "0", "filename": "a.warc.gz"}`, true, entry, ""},
		{"numeric status", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":200,"digest":"` + b32 + `"}`, true, entry, ""},
		{"hex index into a hex proxy", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"200","digest":"` + h + `"}`, false, entry, ""},
		{"base32 index into a hex proxy", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"200","digest":"` + b32 + `"}`, false, entry, ""},
		{"revisit", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","mime":"warc/revisit","status":"200","digest":"` + b32 + `"}`, true, nil, SkipRevisit},
		{"resource", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","mime":"text/plain","digest":"` + b32 + `"}`, true, nil, SkipNotResponse},
		{"sha256", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"200","digest":"` + hex.EncodeToString(s256[:]) + `"}`, true, nil, SkipOtherDigest},
		{"no digest", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"200"}`, true, nil, SkipNoDigest},
		{"bad digest", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"200","digest":"xyz!"}`, true, nil, SkipBadDigest},
		{"short timestamp", `com,example)/a?b=c 202401020304 {"url":"http://example.com/a?b=c","status":"200","digest":"` + b32 + `"}`, true, nil, SkipBadTimestamp},
		{"empty payload", `com,example)/a?b=c 20240102030405 {"url":"http://example.com/a?b=c","status":"204","digest":"3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"}`, true, nil, SkipEmpty},
		{"no url", `com,example)/a?b=c 20240102030405 {"status":"200","digest":"` + b32 + `"}`, true, nil, SkipNoURL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "index.cdxj")
			require.NoError(t, os.WriteFile(p, []byte("!meta {\"format\":\"cdxj\"}\n"+tc.line+"\n\n"), 0o644))
			ins, err := CheckInputs([]string{p})
			require.NoError(t, err)
			var s dedupstest.MemStore
			sum, err := Import(context.Background(), &s, ins, Options{Bucket: "b", Digest: digest.SHA1, Base32: tc.base32})
			require.NoError(t, err)
			require.EqualValues(t, 1, sum.Read, "the meta line and the empty line are not records")
			if tc.skip != "" {
				require.Equal(t, map[string]int64{tc.skip: 1}, sum.Skipped)
				require.Zero(t, s.Len())
				return
			}
			require.Empty(t, sum.Skipped)
			require.EqualValues(t, 1, sum.Added)
			got, err := s.Lookup(context.Background(), []dedup.Key{{Digest: digest.SHA1.Format(s1[:], tc.base32), Bucket: "b"}})
			require.NoError(t, err)
			require.Equal(t, tc.want, got[0])
		})
	}
}

// TestImportCDXJBadLine: a line that is not URLKEY TIMESTAMP {json} ends
// the import with its line number; what came before it is kept.
func TestImportCDXJBadLine(t *testing.T) {
	s1 := sha1.Sum([]byte("payload"))
	good := `com,example)/ 20240102030405 {"url":"http://example.com/","status":"200","digest":"` + base32.StdEncoding.EncodeToString(s1[:]) + `"}`
	p := filepath.Join(t.TempDir(), "index.cdxj")
	require.NoError(t, os.WriteFile(p, []byte(good+"\ncom,example)/ 20240102030405 {not json\n"), 0o644))
	ins, err := CheckInputs([]string{p})
	require.NoError(t, err)
	var s dedupstest.MemStore
	sum, err := Import(context.Background(), &s, ins, Options{Digest: digest.SHA1, Base32: true})
	require.ErrorContains(t, err, "line 2")
	require.EqualValues(t, 1, sum.Added)
	require.Equal(t, 1, s.Len())
}
