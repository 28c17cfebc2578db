package writer

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/cespare/xxhash/v2"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// rawZstd writes a zstd frame of raw blocks only (RFC 8878 3.1.1.2): what
// a record the probe finds incompressible gets. The encoder would store
// such blocks too, after searching them for matches at about 2.5 GB/s;
// here the bytes go to the file buffer as they are, behind a 3-byte block
// header per 128 KiB, with the content size in the frame header and the
// checksum at the end, as the WARC-zstd specification asks of every frame.
// With a dictionary the frame names it, as every frame of such a file must,
// though raw blocks do not refer to it.
type rawZstd struct {
	out    io.Writer
	left   int64 // content bytes still to come
	sum    xxhash.Digest
	err    error
	hdr    [18]byte
	dictID uint32
}

const maxZstdRawBlock = 128 << 10 // Block_Maximum_Size

// Reset starts a frame of size content bytes on out.
func (z *rawZstd) Reset(out io.Writer, size int64) {
	z.out, z.left, z.err = out, size, nil
	z.sum.Reset()
	h := z.hdr[:0]
	h = binary.LittleEndian.AppendUint32(h, warcscan.ZstdFrameMagic)
	// Frame_Header_Descriptor: an 8-byte Frame_Content_Size (3 << 6),
	// Single_Segment (1 << 5: no window descriptor, the window is the
	// content), Content_Checksum (1 << 2), and a 4-byte Dictionary_ID (3).
	fhd := byte(3<<6 | 1<<5 | 1<<2)
	if z.dictID != 0 {
		fhd |= 3
	}
	h = append(h, fhd)
	if z.dictID != 0 {
		h = binary.LittleEndian.AppendUint32(h, z.dictID)
	}
	h = binary.LittleEndian.AppendUint64(h, uint64(size)) //nolint:gosec // a record's size is not negative
	_, z.err = out.Write(h)
	if z.err == nil && size == 0 {
		z.err = z.block(nil) // a frame holds at least one block
	}
}

// Write writes p as raw blocks; the one that reaches the content size is
// marked last.
func (z *rawZstd) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if int64(len(p)) > z.left {
		z.err = errors.New("zstd raw frame: more content than its size")
		return 0, z.err
	}
	_, _ = z.sum.Write(p)
	n := 0
	for len(p) > 0 {
		b := p[:min(len(p), maxZstdRawBlock)]
		z.left -= int64(len(b))
		if z.err = z.block(b); z.err != nil {
			return n, z.err
		}
		n += len(b)
		p = p[len(b):]
	}
	return n, nil
}

// block writes one raw block holding b, the last one when the content is
// complete.
func (z *rawZstd) block(b []byte) error {
	bh := uint32(len(b)) << 3 //nolint:gosec // len(b) <= maxZstdRawBlock; Block_Type raw is 0
	if z.left == 0 {
		bh |= 1 // Last_Block
	}
	h := z.hdr[:3]
	h[0], h[1], h[2] = byte(bh), byte(bh>>8), byte(bh>>16)
	if _, err := z.out.Write(h); err != nil {
		return err
	}
	_, err := z.out.Write(b)
	return err
}

// Close writes the checksum: the low 4 bytes of the content's XXH64.
func (z *rawZstd) Close() error {
	if z.err != nil {
		return z.err
	}
	if z.left != 0 {
		z.err = errors.New("zstd raw frame: content shorter than its size")
		return z.err
	}
	_, z.err = z.out.Write(binary.LittleEndian.AppendUint32(z.hdr[:0], uint32(z.sum.Sum64()))) //nolint:gosec // the low 32 bits, as RFC 8878 says
	return z.err
}
