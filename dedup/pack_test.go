package dedup

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func TestPackEntry(t *testing.T) {
	const uuid = "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>"
	const url = "https://example.com/some/page?q=1"
	for _, tt := range []struct {
		name      string
		e         Entry
		wantFlags byte
		maxLen    int // without the URL; 0: no bound
	}{
		{"uuid and second date pack", Entry{uuid, url, "2026-12-04T18:04:59Z", false}, flagUUID | flagDate, 32},
		{"microseconds pack", Entry{uuid, url, "2026-12-04T18:04:59.123456Z", false}, flagUUID | flagDate, 35},
		{"nanoseconds pack", Entry{uuid, url, "2026-12-04T18:04:59.123456789Z", false}, flagUUID | flagDate, 36},
		{"trailing zeros kept", Entry{uuid, url, "2026-12-04T18:04:59.100Z", false}, flagUUID | flagDate, 0},
		{"leading zeros kept", Entry{uuid, url, "2026-12-04T18:04:59.000001Z", false}, flagUUID | flagDate, 0},
		{"before 1970", Entry{uuid, url, "1969-07-20T20:17:40Z", false}, flagUUID | flagDate, 0},
		{"year 0001", Entry{uuid, url, "0001-01-01T00:00:00Z", false}, flagUUID | flagDate, 0},
		{"uppercase uuid raw", Entry{strings.ToUpper(uuid), url, "2026-12-04T18:04:59Z", false}, flagDate, 0},
		{"uuid without brackets raw", Entry{uuid[1 : len(uuid)-1], url, "2026-12-04T18:04:59Z", false}, flagDate, 0},
		{"uuid with a bad dash raw", Entry{strings.Replace(uuid, "-", "x", 1), url, "2026-12-04T18:04:59Z", false}, flagDate, 0},
		{"non-hex uuid raw", Entry{strings.Replace(uuid, "f", "g", 1), url, "2026-12-04T18:04:59Z", false}, flagDate, 0},
		{"other ID raw", Entry{"<urn:x:1>", url, "2026-12-04T18:04:59Z", false}, flagDate, 0},
		{"offset date raw", Entry{uuid, url, "2026-12-04T18:04:59+00:00", false}, flagUUID, 0},
		{"lowercase z raw", Entry{uuid, url, "2026-12-04T18:04:59z", false}, flagUUID, 0},
		{"ten fraction digits raw", Entry{uuid, url, "2026-12-04T18:04:59.1234567890Z", false}, flagUUID, 0},
		{"empty fraction raw", Entry{uuid, url, "2026-12-04T18:04:59.Z", false}, flagUUID, 0},
		{"signed fraction raw", Entry{uuid, url, "2026-12-04T18:04:59.+1Z", false}, flagUUID, 0},
		{"impossible day raw", Entry{uuid, url, "2026-02-30T18:04:59Z", false}, flagUUID, 0},
		{"leap second raw", Entry{uuid, url, "2016-12-31T23:59:60Z", false}, flagUUID, 0},
		{"day only raw", Entry{uuid, url, "2026-12-04", false}, flagUUID, 0},
		{"all empty", Entry{}, 0, 0},
		{"bytes not UTF-8", Entry{"\xff\x00", "http://ex.com/\xfe", "\x80", false}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, withURL := range []bool{false, true} {
				v := packEntry(tt.e, withURL)
				wantFlags := tt.wantFlags
				if withURL {
					wantFlags |= flagURL
				}
				if v[0] != wantFlags {
					t.Fatalf("flags %08b, want %08b", v[0], wantFlags)
				}
				if !withURL && tt.maxLen > 0 && len(v) > tt.maxLen {
					t.Fatalf("packed to %d bytes, want at most %d", len(v), tt.maxLen)
				}
				p, err := unpackEntry(v)
				if err != nil {
					t.Fatal(err)
				}
				want := packed{ID: tt.e.ID, Date: tt.e.Date, URLHash: urlHash(tt.e.URL)}
				if withURL {
					want.URL, want.HasURL = tt.e.URL, true
				}
				if p != want {
					t.Fatalf("unpacked %+v, want %+v", p, want)
				}
			}
		})
	}
}

// TestPackedSizeBound: an entry as the proxy writes it (a urn:uuid ID, a
// date to the microsecond) packs, without its URL, well under Redis'
// hash-max-listpack-value of 64 bytes, with its field beside it.
func TestPackedSizeBound(t *testing.T) {
	e := Entry{ID: "<urn:uuid:ffffffff-ffff-4fff-bfff-ffffffffffff>", URL: "http://x/", Date: "9999-12-31T23:59:59.999999999Z"}
	if n := len(packEntry(e, false)); n > 40 {
		t.Fatalf("worst packable entry: %d bytes", n)
	}
}

func TestURLHashStable(t *testing.T) {
	// FNV-1a 64 test vectors: a fleet's proxies and releases must agree.
	for in, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c, "foobar": 0x85944171f73967e8} {
		if got := urlHash(in); got != want {
			t.Errorf("urlHash(%q) = %#x, want %#x", in, got, want)
		}
	}
}

func TestUnpackGarbage(t *testing.T) {
	good := packEntry(Entry{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "http://ex.com/", Date: "2026-12-04T18:04:59.5Z"}, true)
	for _, tt := range []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"unknown flag", []byte{0x80}},
		{"pointer with more", []byte{flagPointer, 0}},
		{"truncated", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"no url hash", []byte{0, 0, 0}},
		{"length past the end", []byte{0, 5, 'a'}},
		{"fraction too wide", append([]byte{flagDate, 0, 0, 1, 10}, make([]byte, 8)...)},
		{"too many digits", append([]byte{flagDate, 0, 0, 10, 0}, make([]byte, 8)...)},
		{"year past 9999", append(binary.AppendVarint([]byte{flagDate, 0}, 253402300800), append([]byte{0, 0}, make([]byte, 8)...)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := unpackEntry(tt.v); err == nil {
				t.Fatalf("unpacked %x to %+v", tt.v, p)
			}
		})
	}
	if p, err := unpackEntry(pointerValue); err != nil || !p.Pointer {
		t.Fatalf("pointer: %+v, %v", p, err)
	}
}

// FuzzPack: any entry round-trips exactly, with and without its URL; any
// bytes unpack to an entry or an error, never a panic, and a value that
// unpacks packs back to the same entry.
func FuzzPack(f *testing.F) {
	f.Add("<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", "http://ex.com/\xff", "2026-12-04T18:04:59.123456Z", []byte{flagUUID})
	f.Add("", "", "", []byte{})
	f.Add("<urn:x>", "u", "1969-07-20T20:17:40.000Z", []byte{flagDate, 3, 1, 2})
	f.Fuzz(func(t *testing.T, id, url, date string, raw []byte) {
		e := Entry{ID: id, URL: url, Date: date}
		for _, withURL := range []bool{false, true} {
			p, err := unpackEntry(packEntry(e, withURL))
			if err != nil {
				t.Fatalf("%+v: %v", e, err)
			}
			if p.ID != id || p.Date != date || p.URLHash != urlHash(url) || p.HasURL != withURL || (withURL && p.URL != url) {
				t.Fatalf("%+v (url %v) came back as %+v", e, withURL, p)
			}
		}
		p, err := unpackEntry(raw)
		if err != nil || p.Pointer {
			return
		}
		q, err := unpackEntry(packEntry(Entry{ID: p.ID, URL: p.URL, Date: p.Date}, p.HasURL))
		if err != nil || q.ID != p.ID || q.Date != p.Date || q.HasURL != p.HasURL || q.URL != p.URL {
			t.Fatalf("%x unpacked to %+v, repacked to %+v (%v)", raw, p, q, err)
		}
	})
}
