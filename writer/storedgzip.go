package writer

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// storedGzip writes a gzip member whose deflate stream is stored blocks
// only (RFC 1951 3.2.4): what a block of incompressible bytes gets. A
// deflate writer at level 0 makes the same blocks, but copies every byte
// twice more on the way (into its window, then into its bit writer); here
// each Write goes to the file's buffer as it is, behind a 5-byte block
// header, and only the CRC-32 reads it. For a 1 GiB video that is two
// copies of a gigabyte less.
type storedGzip struct {
	out  io.Writer
	crc  uint32
	size uint32 // ISIZE: the input's length modulo 2^32
	err  error
	hdr  [10]byte
}

// maxStored is the most a stored block holds (its LEN field is 16 bits).
const maxStored = 1<<16 - 1

// gzipHead is a member header with no name, no time and no extra fields:
// ID1 ID2, CM deflate, FLG 0, MTIME 0, XFL 0, OS unknown.
var gzipHead = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// Reset starts a new member on out.
func (s *storedGzip) Reset(out io.Writer) {
	*s = storedGzip{out: out}
	_, s.err = out.Write(gzipHead[:])
}

// Write writes p as stored blocks that are not the last one.
func (s *storedGzip) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	s.size += uint32(len(p)) //nolint:gosec // ISIZE is the length modulo 2^32 (RFC 1952)
	n := 0
	for len(p) > 0 {
		b := p[:min(len(p), maxStored)]
		if s.err = s.block(b, false); s.err != nil {
			return n, s.err
		}
		n += len(b)
		p = p[len(b):]
	}
	return n, nil
}

// block writes one stored block holding b (the block header is whole
// bytes: every block before it was stored too).
func (s *storedGzip) block(b []byte, final bool) error {
	h := s.hdr[:5]
	h[0] = 0 // BFINAL 0, BTYPE 00 (stored), then padding to the byte
	if final {
		h[0] = 1
	}
	binary.LittleEndian.PutUint16(h[1:], uint16(len(b)))  //nolint:gosec // len(b) <= maxStored
	binary.LittleEndian.PutUint16(h[3:], ^uint16(len(b))) //nolint:gosec // NLEN, its complement
	if _, err := s.out.Write(h); err != nil {
		return err
	}
	_, err := s.out.Write(b)
	return err
}

// Close ends the deflate stream with an empty last block and writes the
// member's trailer: CRC-32 and ISIZE.
func (s *storedGzip) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.err = s.block(nil, true); s.err != nil {
		return s.err
	}
	t := s.hdr[:8]
	binary.LittleEndian.PutUint32(t, s.crc)
	binary.LittleEndian.PutUint32(t[4:], s.size)
	_, s.err = s.out.Write(t)
	return s.err
}
