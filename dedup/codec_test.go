package dedup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeEntryAsWarcprox: values are byte for byte what warcprox's
// json.dumps(..., separators=(',',':')) writes for the same header bytes
// (taken as Latin-1), so tools that read warcprox's values read ours.
func TestEncodeEntryAsWarcprox(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    Entry
		want string // from Python 3: json.dumps({...}, separators=(',',':'))
	}{
		{
			name: "plain",
			e:    Entry{ID: "<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>", URL: "https://example.com/a?b=c&d=<e>", Date: "2024-03-01T12:34:56Z"},
			want: `{"id":"<urn:uuid:3f0c5e54-9c55-4e3c-8d38-0e7c7a6a4b11>","url":"https://example.com/a?b=c&d=<e>","date":"2024-03-01T12:34:56Z"}`,
		},
		{
			name: "escapes and bytes beyond ASCII",
			e:    Entry{ID: "<urn:uuid:3f0c5e54>", URL: "http://ex.com/\xc3\xbc?q=\"x\"&y=<z>\\\x7f\xff\n\t\x01\x1f~ ", Date: "2024-03-01T12:34:56Z"},
			want: `{"id":"<urn:uuid:3f0c5e54>","url":"http://ex.com/\u00c3\u00bc?q=\"x\"&y=<z>\\\u007f\u00ff\n\t\u0001\u001f~ ","date":"2024-03-01T12:34:56Z"}`,
		},
		{
			name: "empty",
			want: `{"id":"","url":"","date":""}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeEntry(tt.e)
			require.Equal(t, tt.want, string(got))
			back, err := decodeEntry(got)
			require.NoError(t, err)
			require.Equal(t, tt.e, back)
		})
	}
}

// TestDecodeEntry reads values that other writers may have left: key order
// and spacing do not matter, UTF-8 text with characters beyond Latin-1 is
// kept as it is, and garbage is an error.
func TestDecodeEntry(t *testing.T) {
	e, err := decodeEntry([]byte(`{ "date": "d", "url": "http://日本/ü", "id": "<i>" }`))
	require.NoError(t, err)
	require.Equal(t, Entry{ID: "<i>", URL: "http://日本/ü", Date: "d"}, e)

	for _, bad := range []string{``, `{`, `[]`, `{"id":1}`} {
		_, err := decodeEntry([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestStorageKey(t *testing.T) {
	for _, tt := range []struct {
		k    Key
		want string
	}{
		{Key{Digest: "sha1:ABC", Bucket: ""}, "sha1:ABC|"},
		{Key{Digest: "sha1:ABC", Bucket: "a|b c"}, "sha1:ABC|a|b c"},
		{Key{Digest: "a|b", Bucket: "c"}, "a%7Cb|c"},
		{Key{Digest: "a%7Cb", Bucket: "c"}, "a%257Cb|c"},
	} {
		require.Equal(t, tt.want, storageKey(tt.k))
	}
}

// FuzzEntryCodec: any entry survives encoding and decoding unchanged.
func FuzzEntryCodec(f *testing.F) {
	f.Add("<urn:uuid:1>", "http://ex.com/\xc3\xbc\xff", "2024-03-01T12:34:56Z")
	f.Add("", "\x00\"\\", "\u2028")
	f.Fuzz(func(t *testing.T, id, url, date string) {
		e := Entry{ID: id, URL: url, Date: date}
		got, err := decodeEntry(encodeEntry(e))
		if err != nil {
			t.Fatalf("decoding %q: %v", encodeEntry(e), err)
		}
		if got != e {
			t.Fatalf("round trip of %+v gave %+v", e, got)
		}
	})
}

// FuzzStorageKey: two keys share a storage key only if they are equal.
func FuzzStorageKey(f *testing.F) {
	f.Add("a|b", "c", "a", "b|c")
	f.Add("a%7Cb", "", "a|b", "")
	f.Fuzz(func(t *testing.T, d1, b1, d2, b2 string) {
		k1, k2 := Key{Digest: d1, Bucket: b1}, Key{Digest: d2, Bucket: b2}
		if (storageKey(k1) == storageKey(k2)) != (k1 == k2) {
			t.Fatalf("%q and %q: storage keys %q and %q", k1, k2, storageKey(k1), storageKey(k2))
		}
	})
}
