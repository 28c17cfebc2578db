package dedupimport

import (
	"encoding/base32"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/warcproxy/warcproxy/internal/digest"
)

// sizes are the sums of the algorithms the proxy writes, by length.
var sizes = map[int]digest.Algorithm{20: digest.SHA1, 32: digest.SHA256}

var errBadDigest = errors.New("not a digest")

// parseDigest reads a payload digest in any of the forms archives write:
// "sha1:BASE32" (WARC-Payload-Digest), lower- or upper-case hex, base32
// with or without its padding, with or without the "alg:" label (CDXJ
// lines drop it). Without a label the algorithm is told by the length of
// the sum: 20 bytes SHA-1, 32 bytes SHA-256.
func parseDigest(s string) (digest.Algorithm, []byte, error) {
	label, value, labelled := strings.Cut(strings.TrimSpace(s), ":")
	if !labelled {
		value, label = label, ""
	}
	sum, err := decodeSum(value, labelled && !isKnown(digest.Algorithm(strings.ToLower(label))))
	if err != nil {
		return "", nil, err
	}
	alg, ok := sizes[len(sum)]
	if labelled {
		// An algorithm the proxy does not write (md5, sha512) is one
		// whose digests can never match: reported as such.
		alg, ok = digest.Algorithm(strings.ToLower(label)), true
		if want, known := sizes[len(sum)]; known && isKnown(alg) && want != alg {
			return "", nil, errBadDigest
		}
	}
	if !ok {
		return "", nil, errBadDigest
	}
	return alg, sum, nil
}

func isKnown(a digest.Algorithm) bool {
	_, err := digest.Parse(string(a))
	return err == nil
}

// decodeSum decodes hex (an even number of hex digits) or base32. Hex is
// taken when it gives a sum of a known size, or of any size for another
// algorithm (anyHex): SHA-1's base32 has 32 characters, which could
// also be 16 bytes of hex.
func decodeSum(v string, anyHex bool) ([]byte, error) {
	if v == "" {
		return nil, errBadDigest
	}
	if len(v)%2 == 0 && isHex(v) {
		if b, err := hex.DecodeString(v); err == nil && (anyHex || sizes[len(b)] != "") {
			return b, nil
		}
	}
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.TrimRight(strings.ToUpper(v), "="))
	if err != nil {
		return nil, errBadDigest
	}
	return b, nil
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdefABCDEF") == ""
}
