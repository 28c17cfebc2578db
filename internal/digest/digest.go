// Package digest formats WARC digests ("sha1:BASE32") for the algorithms
// warcproxy supports.
package digest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"hash"
)

// Algorithm names a digest algorithm as it appears in WARC headers.
type Algorithm string

// Supported algorithms.
const (
	SHA1   Algorithm = "sha1"
	SHA256 Algorithm = "sha256"
)

// Parse validates an algorithm name given on the command line.
func Parse(s string) (Algorithm, error) {
	switch Algorithm(s) {
	case SHA1, SHA256:
		return Algorithm(s), nil
	}
	return "", fmt.Errorf("unsupported digest algorithm %q (want sha1 or sha256)", s)
}

// New returns a fresh hash for the algorithm.
func (a Algorithm) New() hash.Hash {
	if a == SHA256 {
		return sha256.New()
	}
	return sha1.New()
}

// Format renders a finished sum as a WARC digest value, in base32 (the
// convention of most web archives) or lowercase hex.
func (a Algorithm) Format(sum []byte, b32 bool) string {
	if b32 {
		return string(a) + ":" + base32.StdEncoding.EncodeToString(sum)
	}
	return string(a) + ":" + hex.EncodeToString(sum)
}

// Of returns the formatted digest of p.
func (a Algorithm) Of(p []byte, b32 bool) string {
	h := a.New()
	h.Write(p)
	return a.Format(h.Sum(nil), b32)
}
