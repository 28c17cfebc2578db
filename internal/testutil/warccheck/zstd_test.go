package warccheck

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// zstdLayout says how writeZstd lays records out.
type zstdLayout struct {
	groups []int    // records per frame (nil: one each)
	dict   []byte   // the dictionary: a dictionary frame first, every frame using it
	args   []string // more zstd arguments for the frames (--no-check, ...)
	noHead bool     // leave the dictionary frame out
}

// writeZstd writes recs to path as a .warc.zst file compressed by the
// zstd command.
func writeZstd(t *testing.T, path string, recs []record, l zstdLayout) {
	t.Helper()
	var out bytes.Buffer
	if l.dict != nil && !l.noHead {
		var h [8]byte
		binary.LittleEndian.PutUint32(h[:], zstdDictFrameMagic)
		binary.LittleEndian.PutUint32(h[4:], uint32(len(l.dict)))
		out.Write(h[:])
		out.Write(l.dict)
	}
	if l.groups == nil {
		for range recs {
			l.groups = append(l.groups, 1)
		}
	}
	i := 0
	for _, n := range l.groups {
		var plain []byte
		for range n {
			plain = append(plain, recs[i].bytes()...)
			i++
		}
		out.Write(zstdcli.Frame(t, plain, l.dict, l.args...))
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// trainDict trains a small dictionary on records like validRecords'.
func trainDict(t *testing.T) []byte {
	t.Helper()
	var samples [][]byte
	for range 40 {
		for _, r := range validRecords() {
			samples = append(samples, r.bytes())
		}
	}
	return zstdcli.Train(t, samples, 2048)
}

// TestZstdValid: a .warc.zst file laid out as the spec says passes, with
// or without a dictionary, and records are reported at their frames'
// offsets.
func TestZstdValid(t *testing.T) {
	zstdcli.Path(t)
	for name, l := range map[string]zstdLayout{"no dictionary": {}, "dictionary": {dict: trainDict(t)}} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a.warc.zst")
			writeZstd(t, path, validRecords(), l)
			recs := Dir(t, dir)
			if len(recs) != len(validRecords()) {
				t.Fatalf("got %d records, want %d", len(recs), len(validRecords()))
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				if binary.LittleEndian.Uint32(data[r.Offset:]) != zstdFrameMagic {
					t.Errorf("record %d (%s) at offset %d, which is not a frame's start", i, r.Type, r.Offset)
				}
			}
			if want := int64(8 + len(l.dict)); l.dict != nil && recs[0].Offset != want {
				t.Errorf("first record at %d, want %d (after the dictionary frame)", recs[0].Offset, want)
			}
		})
	}
}

// TestZstdDetects: each way a .warc.zst file can break the spec, or hold
// records that are not one per frame, fails Dir.
func TestZstdDetects(t *testing.T) {
	zstdcli.Path(t)
	d := trainDict(t)
	bad := validRecords()
	bad[2] = bad[2].set("WARC-Block-Digest", sha1B32([]byte("something else")))
	// The frame checks are ours and word their problems the same whatever
	// reader is present; a digest is checked by each reader in its own
	// words: gowarc's always, warcio.js's where node and its package are.
	_, _, noWarcio := warcioCommand()
	for _, tc := range []struct {
		name       string
		recs       []record
		l          zstdLayout
		want       string // reported by the frame checks, or by gowarc
		warcioWant string // reported by warcio.js too, when it ran
	}{
		{"two records in one frame", validRecords(), zstdLayout{groups: []int{1, 2, 1, 1}}, "holds 2 records", ""},
		{"no checksum", validRecords(), zstdLayout{args: []string{"--no-check"}}, "no Content_Checksum", ""},
		{"no content size", validRecords(), zstdLayout{args: []string{"--no-content-size"}}, "no Frame_Content_Size", ""},
		{"dictionary frame missing", validRecords(), zstdLayout{dict: d, noHead: true}, "Dictionary_ID", ""},
		{"wrong block digest", bad, zstdLayout{}, "block: wrong digest", "WARC-Block-Digest mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeZstd(t, filepath.Join(dir, "a.warc.zst"), tc.recs, tc.l)
			f := run(t, func(tb testing.TB) { Dir(tb, dir) })
			if len(f.fatals) == 0 {
				t.Errorf("Dir did not fail the test; reported:\n%s", f.all())
			}
			if !strings.Contains(f.all(), tc.want) {
				t.Errorf("want a problem containing %q, got:\n%s", tc.want, f.all())
			}
			if tc.warcioWant != "" && noWarcio == nil && !strings.Contains(f.all(), tc.warcioWant) {
				t.Errorf("warcio.js ran: want a problem containing %q, got:\n%s", tc.warcioWant, f.all())
			}
		})
	}

	t.Run("record split over two frames", func(t *testing.T) {
		dir := t.TempDir()
		var out []byte
		for i, r := range validRecords() {
			b := r.bytes()
			if i == 1 {
				out = append(out, zstdcli.Frame(t, b[:40], nil)...)
				b = b[40:]
			}
			out = append(out, zstdcli.Frame(t, b, nil)...)
		}
		if err := os.WriteFile(filepath.Join(dir, "a.warc.zst"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		f := run(t, func(tb testing.TB) { Dir(tb, dir) })
		if len(f.fatals) == 0 {
			t.Errorf("Dir accepted a record split over two frames; reported:\n%s", f.all())
		}
	})
}
