package cdxj

import (
	"strings"
	"unicode/utf8"

	"github.com/warcproxy/warcproxy/internal/jsonstr"
)

// appendJSString appends s as JSON.stringify writes it: only '"', '\\' and
// control characters are escaped ("<", "&", U+2028 and non-ASCII stay as
// they are); invalid UTF-8 becomes U+FFFD.
func appendJSString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b = jsonstr.AppendASCII(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// jsonField is one key and string value of an index line's JSON.
type jsonField struct{ key, value string }

func appendJSONObject(b []byte, fields []jsonField) []byte {
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSString(b, f.key)
		b = append(b, ':')
		b = appendJSString(b, f.value)
	}
	return append(b, '}')
}

// sliceUTF16 returns the first n UTF-16 code units of s (String.slice(0,
// n)); a surrogate pair cut in half is dropped whole, as the lone surrogate
// cannot be written as UTF-8.
func sliceUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return strings.Clone(s)
}
