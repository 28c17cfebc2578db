package dedupimport

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/warcproxy/warcproxy/internal/digest"
)

func TestParseDigest(t *testing.T) {
	s1 := sha1.Sum([]byte("payload"))
	s256 := sha256.Sum256([]byte("payload"))
	b32 := base32.StdEncoding.EncodeToString
	tests := []struct {
		name, in string
		alg      digest.Algorithm
		sum      []byte
	}{
		{"WARC sha1 base32", "sha1:" + b32(s1[:]), digest.SHA1, s1[:]},
		{"CDXJ sha1 base32, no label", b32(s1[:]), digest.SHA1, s1[:]},
		{"lower-case base32", strings.ToLower(b32(s1[:])), digest.SHA1, s1[:]},
		{"sha1 hex", "sha1:" + hex.EncodeToString(s1[:]), digest.SHA1, s1[:]},
		{"sha1 hex, no label, upper case", strings.ToUpper(hex.EncodeToString(s1[:])), digest.SHA1, s1[:]},
		{"label in upper case", "SHA1:" + b32(s1[:]), digest.SHA1, s1[:]},
		{"sha256 base32 padded", "sha256:" + b32(s256[:]), digest.SHA256, s256[:]},
		{"sha256 base32 unpadded, no label", strings.TrimRight(b32(s256[:]), "="), digest.SHA256, s256[:]},
		{"sha256 hex, no label", hex.EncodeToString(s256[:]), digest.SHA256, s256[:]},
		{"md5 label: another algorithm", "md5:" + hex.EncodeToString(s1[:16]), "md5", s1[:16]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alg, sum, err := parseDigest(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.alg, alg)
			require.Equal(t, tc.sum, sum)
		})
	}
	for _, bad := range []string{"", "-", "sha1:", "sha1:not base32!", "ABCD", "sha1:" + b32(s256[:]), "sha256:" + b32(s1[:])} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, _, err := parseDigest(bad)
			require.Error(t, err)
		})
	}
}
