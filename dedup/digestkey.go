package dedup

import (
	"encoding/base32"
	"encoding/hex"
	"strings"
)

// binaryDigest is a payload digest decoded from its text form.
type binaryDigest struct {
	algo  byte   // algoSHA1, algoSHA256: the first byte of an embedded key
	name  string // "sha1", "sha256": in Redis key names
	bytes []byte
}

const (
	algoSHA1   = 1
	algoSHA256 = 2
)

// decodeDigest decodes "sha1:BASE32" (or sha256, or the lowercase hex that
// --base32=false writes) when encoding the bytes back gives the exact
// string, so that two digests share a binary key only when they were
// written alike. Anything else (another algorithm, another case, a
// truncated value) does not decode: its entry keeps the old layout.
func decodeDigest(d string) (binaryDigest, bool) {
	name, text, ok := strings.Cut(d, ":")
	if !ok {
		return binaryDigest{}, false
	}
	var bd binaryDigest
	var size int
	switch name {
	case "sha1":
		bd, size = binaryDigest{algo: algoSHA1, name: name}, 20
	case "sha256":
		bd, size = binaryDigest{algo: algoSHA256, name: name}, 32
	default:
		return binaryDigest{}, false
	}
	var err error
	switch len(text) {
	case base32.StdEncoding.EncodedLen(size):
		bd.bytes, err = base32.StdEncoding.DecodeString(text)
		ok = err == nil && base32.StdEncoding.EncodeToString(bd.bytes) == text
	case hex.EncodedLen(size):
		bd.bytes, err = hex.DecodeString(text)
		ok = err == nil && hex.EncodeToString(bd.bytes) == text
	default:
		ok = false
	}
	if !ok || len(bd.bytes) != size {
		return binaryDigest{}, false
	}
	return bd, true
}
