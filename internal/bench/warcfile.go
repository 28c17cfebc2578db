package bench

import (
	"io"
	"os"
	"strings"

	"github.com/nlnwa/gowarc/v3"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// isWARCName reports whether name is a WARC file, closed or still open.
func isWARCName(name string) bool {
	return warcscan.ForName(strings.TrimSuffix(name, ".open")) != nil
}

// openWARC opens the WARC file at path for gowarc's reader, which reads
// .warc and .warc.gz files but not .warc.zst: those it reads through
// warcscan.NewReader, as the zstd command would decompress them (record
// offsets in its errors are then offsets in the decompressed bytes).
func openWARC(path string, opts ...gowarc.WarcRecordOption) (*gowarc.WarcFileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var magic [8]byte
	n, _ := io.ReadFull(f, magic[:])
	if warcscan.Sniff(magic[:n]) != warcscan.Zstd {
		// gowarc seeks back to the start and reads the rest itself.
		return gowarc.NewWarcFileReaderFromStream(f, 0, opts...)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, err
	}
	return gowarc.NewWarcFileReaderFromStream(zstdFile{warcscan.NewReader(f, warcscan.Zstd), f}, 0, opts...)
}

// zstdFile is a .warc.zst file's decompressed bytes, closed with the file
// (the WarcFileReader closes what it reads from).
type zstdFile struct {
	io.Reader
	io.Closer
}
