package warcscan

import (
	"bufio"
	"io"
)

// NewReader returns the bytes of the WARC file r of codec c (nil: sniffed
// from the first bytes) as an uncompressed .warc file holds them: each unit
// decompressed in turn, what holds no record (a zstd dictionary frame)
// left out. It is for readers that know only .warc and .warc.gz files
// (gowarc's, for one): gowarc.NewWarcFileReaderFromStream(NewReader(f, nil), 0)
// reads a .warc.zst file too. Unlike a Scanner it does not check that a
// unit holds exactly one record; a unit that is cut short or fails its
// checksum is a read error.
func NewReader(r io.Reader, c Codec) io.Reader {
	src := bufio.NewReaderSize(r, fileBuf)
	if c == nil {
		magic, _ := src.Peek(sniffLen)
		c = Sniff(magic)
	}
	dec := c.NewDecoder()
	if dec == nil {
		return src
	}
	return &unitsReader{src: src, dec: dec}
}

// unitsReader reads the units of a compressed file one after the other.
type unitsReader struct {
	src  *bufio.Reader
	dec  Decoder
	unit io.Reader // the unit being read; nil between units
	err  error     // sticky: io.EOF after the last unit
}

func (u *unitsReader) Read(p []byte) (int, error) {
	for u.err == nil {
		if u.unit == nil {
			if u.err = u.dec.Skip(u.src); u.err != nil {
				break
			}
			if u.unit, u.err = u.dec.Open(u.src); u.err != nil {
				break
			}
		}
		n, err := u.unit.Read(p)
		if err == io.EOF {
			u.unit = nil
			err = nil
		}
		if n > 0 || err != nil || len(p) == 0 {
			return n, err
		}
	}
	return 0, u.err
}
