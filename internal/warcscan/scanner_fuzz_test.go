package warcscan

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzScanner feeds arbitrary bytes to the scanner as a file of one of
// codecs (.warc.gz, .warc.zst, .warc). It must not panic; the records it
// reads lie end to end from offset 0 to End (in a zstd file skippable
// frames may come between them); the scan ends with io.EOF exactly when End is the end
// of the data, else with ErrNotWhole; keeping headers or not reads the
// same records; and the data cut at End, as recovery cuts it, scans to
// io.EOF with the same records.
func FuzzScanner(f *testing.F) {
	info := warcRecord("warcinfo", "Content-Type: application/warc-fields\r\n", "software: test\r\n")
	resp := warcRecord("response", "WARC-Target-URI: http://example.com/\r\n X-Folded: value\r\n", "HTTP/1.1 200 OK\r\n\r\nhi")
	for i, c := range codecs {
		file := makeFile(f, c, info, resp)
		f.Add(file.data, uint8(i))
		f.Add(file.data[:file.ends[0]], uint8(i))
		f.Add(file.data[:file.ends[0]+(file.ends[1]-file.ends[0])/2], uint8(i))
		f.Add(append(file.data, "WARC/1.0\r\n"...), uint8(i))
		f.Add([]byte{}, uint8(i))
	}
	f.Add(gzipMember(f, append(info, info...)), uint8(0))
	f.Add(dictFile(f, ZstdDictFrame(testDict(f)), testDict(f), info, resp).data, uint8(1))
	f.Add(bytes.ReplaceAll(info, []byte("\r\n"), []byte("\n")), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, codec uint8) {
		c := codecs[int(codec)%len(codecs)]
		kept := scanAll(bytes.NewReader(data), Options{Codec: c})
		// Records lie end to end from offset 0, except that in a zstd
		// file skippable frames (the dictionary's, extensions) may come
		// before one.
		at := int64(0)
		for i := range kept.offsets {
			if c == Zstd && kept.offsets[i] > at {
				at = kept.offsets[i]
			}
			if kept.offsets[i] != at || kept.lengths[i] <= 0 {
				t.Fatalf("record %d at %d, %d bytes long; want it at %d", i, kept.offsets[i], kept.lengths[i], at)
			}
			at += kept.lengths[i]
		}
		if at != kept.end || int64(len(kept.offsets)) != kept.records {
			t.Fatalf("records end at %d (%d of them), End %d (Records %d)", at, len(kept.offsets), kept.end, kept.records)
		}
		whole := kept.end == int64(len(data))
		if whole && !errors.Is(kept.err, io.EOF) || !whole && !errors.Is(kept.err, ErrNotWhole) && !errors.Is(kept.err, ErrHeaderTooLong) {
			t.Fatalf("scan of %d bytes ended at %d with %v", len(data), kept.end, kept.err)
		}

		skipped := scanAll(bytes.NewReader(data), Options{Codec: c, SkipHeaders: true})
		if !errors.Is(kept.err, ErrHeaderTooLong) && (skipped.end != kept.end || skipped.records != kept.records) {
			t.Fatalf("with headers skipped the scan ends at %d after %d records, kept at %d after %d",
				skipped.end, skipped.records, kept.end, kept.records)
		}

		cut := scanAll(bytes.NewReader(data[:kept.end]), Options{Codec: c})
		if !errors.Is(cut.err, io.EOF) || cut.records != kept.records || cut.end != kept.end {
			t.Fatalf("cut at %d: %d records to %d, %v; want %d records", kept.end, cut.records, cut.end, cut.err, kept.records)
		}
	})
}
