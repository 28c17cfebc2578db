// Package jsonstr has the escaping that every JSON string writer in the
// project shares. Each writer follows another program's bytes exactly
// (warcprox's Python for the dedup values and the crawl log, warcio.js for
// CDXJ), and they differ only beyond the ASCII control characters: what
// they do with DEL, the space and non-ASCII text. Those choices stay with
// the writers; the common part is here.
package jsonstr

const hex = "0123456789abcdef"

// AppendASCII appends the ASCII byte c (below 0x80) as it goes inside a
// JSON string: '"' and '\\' escaped, \b \f \n \r \t by name, the other
// control characters as \u00XX (lowercase hex), everything else as is.
func AppendASCII(b []byte, c byte) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(b, '\\', c)
	case c >= 0x20:
		return append(b, c)
	case c == '\b':
		return append(b, '\\', 'b')
	case c == '\f':
		return append(b, '\\', 'f')
	case c == '\n':
		return append(b, '\\', 'n')
	case c == '\r':
		return append(b, '\\', 'r')
	case c == '\t':
		return append(b, '\\', 't')
	}
	return AppendU(b, rune(c))
}

// AppendU appends r as \uXXXX (lowercase hex, as Python writes it); r
// above U+FFFF becomes its UTF-16 surrogate pair.
func AppendU(b []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		b = AppendU(b, 0xd800+(r>>10))
		return AppendU(b, 0xdc00+(r&0x3ff))
	}
	return append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
}
