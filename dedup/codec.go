package dedup

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/warcproxy/warcproxy/internal/jsonstr"
)

// encodeEntry writes e as warcprox writes a dedup value: Python's
// json.dumps({'id':..,'url':..,'date':..}, separators=(',',':')) of the
// header values decoded as Latin-1. Every byte of a value therefore
// survives, valid UTF-8 or not: bytes outside printable ASCII become
// \u00XX escapes.
func encodeEntry(e Entry) []byte {
	b := make([]byte, 0, 24+len(e.ID)+len(e.URL)+len(e.Date))
	b = append(b, `{"id":`...)
	b = appendPyString(b, e.ID)
	b = append(b, `,"url":`...)
	b = appendPyString(b, e.URL)
	b = append(b, `,"date":`...)
	b = appendPyString(b, e.Date)
	return append(b, '}')
}

// appendPyString appends s, taken byte by byte as Latin-1, as a JSON string
// with Python's ensure_ascii escaping.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x7f {
			b = jsonstr.AppendASCII(b, c)
		} else {
			b = jsonstr.AppendU(b, rune(c))
		}
	}
	return append(b, '"')
}

// decodeEntry reads a value written by encodeEntry (or by warcprox). A
// string whose characters all fit in Latin-1 is turned back into those
// bytes; one with wider characters (written by some other tool as UTF-8
// text) is kept as it is.
func decodeEntry(v []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(v, &e); err != nil {
		return Entry{}, err
	}
	e.ID, e.URL, e.Date = fromLatin1(e.ID), fromLatin1(e.URL), fromLatin1(e.Date)
	return e, nil
}

func fromLatin1(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return s
		}
		b = append(b, byte(r))
	}
	return string(b)
}
