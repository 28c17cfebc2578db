package warcscan

import (
	"bufio"
	"io"

	"github.com/klauspost/compress/gzip"
)

// Gzip is the codec of .warc.gz files: each record is one gzip member
// (WARC 1.1, annex D).
var Gzip Codec = gzipCodec{}

type gzipCodec struct{}

var _ Codec = gzipCodec{}

func (gzipCodec) Name() string { return "gzip" }
func (gzipCodec) Ext() string  { return ".gz" }

func (gzipCodec) Sniff(p []byte) bool { return len(p) >= 2 && p[0] == 0x1f && p[1] == 0x8b }

func (gzipCodec) NewDecoder() Decoder { return &gzipDecoder{} }

// gzipDecoder reads members with one reused klauspost inflater, which is
// faster than compress/gzip's. Reading from src, an io.ByteReader, the
// inflater takes bytes one at a time and stops at the end of the member's
// trailer, so src stands where the next member starts.
type gzipDecoder struct {
	zr gzip.Reader
}

var _ Decoder = (*gzipDecoder)(nil)

func (*gzipDecoder) Skip(*bufio.Reader) error { return nil }

func (d *gzipDecoder) Open(src *bufio.Reader) (io.Reader, error) {
	if err := d.zr.Reset(src); err != nil {
		return nil, err // io.EOF when src holds no byte
	}
	// One member per unit: stop at the end of this one, after its CRC
	// and length are checked.
	d.zr.Multistream(false)
	return &d.zr, nil
}
