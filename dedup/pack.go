package dedup

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"strconv"
	"time"
)

// The compact layout stores an entry as a packed value: a flags byte, the
// record ID, the WARC-Date, an 8-byte hash of the URL and, where the
// backend keeps it, the full URL. Each part is packed only when unpacking
// gives back the exact string; otherwise it is kept as length-prefixed
// bytes, so every entry round-trips.
const (
	flagUUID    = 1 << iota // ID: 16 bytes of <urn:uuid:...>; else uvarint length + bytes
	flagDate                // Date: varint unix seconds, uvarint fraction digits, uvarint fraction; else uvarint length + bytes
	flagURL                 // after the URL hash: uvarint length + the full URL
	flagPointer             // no entry here: it is in the old string layout (Redis, too big for a hash value)

	knownFlags = flagUUID | flagDate | flagURL | flagPointer
)

const (
	uuidPrefix = "<urn:uuid:"
	uuidLen    = len(uuidPrefix) + 36 + 1
	dateLayout = "2006-01-02T15:04:05"
	maxFrac    = 9
)

var errBadPacked = errors.New("dedup: malformed packed entry")

// packed is an entry as the compact layout holds it.
type packed struct {
	ID, Date string
	URLHash  uint64
	URL      string // only with HasURL
	HasURL   bool
	Pointer  bool // a flagPointer value: nothing else is set
}

// urlHash is FNV-1a 64 of the URL's bytes: stable across processes and
// releases, so that any proxy of a fleet compares the same numbers.
func urlHash(u string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(u))
	return h.Sum64()
}

// pointerValue is the value of an entry kept in the old string layout.
var pointerValue = []byte{flagPointer}

// packEntry packs e, with the full URL when withURL.
func packEntry(e Entry, withURL bool) []byte {
	b := make([]byte, 1, 48+len(e.URL))
	if u, ok := packUUID(e.ID); ok {
		b[0] |= flagUUID
		b = append(b, u[:]...)
	} else {
		b = appendBytes(b, e.ID)
	}
	if sec, digits, frac, ok := packDate(e.Date); ok {
		b[0] |= flagDate
		b = binary.AppendVarint(b, sec)
		b = binary.AppendUvarint(b, uint64(digits))
		b = binary.AppendUvarint(b, frac)
	} else {
		b = appendBytes(b, e.Date)
	}
	b = binary.BigEndian.AppendUint64(b, urlHash(e.URL))
	if withURL {
		b[0] |= flagURL
		b = appendBytes(b, e.URL)
	}
	return b
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// unpackEntry reads a value packEntry (or pointerValue) wrote. Garbage is
// an error, never a panic.
func unpackEntry(b []byte) (packed, error) {
	r := reader{b: b}
	flags := r.byte()
	if r.err != nil || flags&^knownFlags != 0 {
		return packed{}, errBadPacked
	}
	if flags&flagPointer != 0 {
		if len(b) != 1 {
			return packed{}, errBadPacked
		}
		return packed{Pointer: true}, nil
	}
	var p packed
	if flags&flagUUID != 0 {
		p.ID = unpackUUID(r.next(16))
	} else {
		p.ID = r.str()
	}
	if flags&flagDate != 0 {
		sec, digits, frac := r.varint(), r.uvarint(), r.uvarint()
		if r.err == nil {
			var ok bool
			if p.Date, ok = formatDate(sec, digits, frac); !ok {
				return packed{}, errBadPacked
			}
		}
	} else {
		p.Date = r.str()
	}
	if h := r.next(8); h != nil {
		p.URLHash = binary.BigEndian.Uint64(h)
	}
	if flags&flagURL != 0 {
		p.URL, p.HasURL = r.str(), true
	}
	if r.err != nil || len(r.b) != 0 {
		return packed{}, errBadPacked
	}
	return p, nil
}

// packUUID returns the 16 bytes of a record ID written exactly as
// <urn:uuid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx> in lowercase.
func packUUID(id string) (u [16]byte, ok bool) {
	if len(id) != uuidLen || id[:len(uuidPrefix)] != uuidPrefix || id[uuidLen-1] != '>' {
		return u, false
	}
	s := id[len(uuidPrefix) : uuidLen-1]
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, unpackUUID(u[:]) == id // uppercase hex does not come back
}

func unpackUUID(u []byte) string {
	if len(u) != 16 {
		return ""
	}
	h := hex.EncodeToString(u)
	return uuidPrefix + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32] + ">"
}

// packDate splits a WARC-Date written as 2006-01-02T15:04:05Z, with
// optionally 1 to 9 fraction digits before the Z, when formatDate gives it
// back exactly.
func packDate(d string) (sec int64, digits uint64, frac uint64, ok bool) {
	if len(d) < len(dateLayout)+1 || d[len(d)-1] != 'Z' {
		return 0, 0, 0, false
	}
	t, err := time.Parse(dateLayout, d[:len(dateLayout)])
	if err != nil {
		return 0, 0, 0, false
	}
	if rest := d[len(dateLayout) : len(d)-1]; rest != "" {
		if rest[0] != '.' || len(rest) < 2 || len(rest)-1 > maxFrac {
			return 0, 0, 0, false
		}
		if frac, err = strconv.ParseUint(rest[1:], 10, 64); err != nil {
			return 0, 0, 0, false
		}
		digits = uint64(len(rest) - 1)
	}
	sec = t.Unix()
	back, ok := formatDate(sec, digits, frac)
	return sec, digits, frac, ok && back == d
}

var pow10 = [maxFrac + 1]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

func formatDate(sec int64, digits, frac uint64) (string, bool) {
	if digits > maxFrac || frac >= pow10[digits] {
		return "", false
	}
	t := time.Unix(sec, 0).UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return "", false
	}
	b := t.AppendFormat(make([]byte, 0, 32), dateLayout)
	if digits > 0 {
		b = append(b, '.')
		f := strconv.FormatUint(frac, 10)
		for range int(digits) - len(f) {
			b = append(b, '0')
		}
		b = append(b, f...)
	}
	return string(append(b, 'Z')), true
}

// reader takes a packed value apart; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) next(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errBadPacked
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if v := r.next(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadPacked
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadPacked
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadPacked
		return ""
	}
	return string(r.next(int(n)))
}
