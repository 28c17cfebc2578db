package warcscan

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Zstd is the codec of .warc.zst files, as the WARC-zstd specification
// (iipc/warc-specifications, "Zstandard Compression for WARC Files 1.0")
// lays them out: each record is one zstd frame that carries its content
// size and checksum, and a file may start with a dictionary frame (a
// skippable frame holding a zstd dictionary, compressed or not), which
// every frame of the file then uses and names by its Dictionary_ID.
// Other skippable frames (the spec's extension frames) are skipped.
var Zstd Codec = zstdCodec{}

// Magic numbers of the WARC-zstd format, as little-endian uint32s.
const (
	// ZstdFrameMagic starts a zstd frame (28 b5 2f fd in the file); the
	// writer starts its raw frames with it too.
	ZstdFrameMagic = 0xFD2FB528
	// zstdDictFrameMagic starts the dictionary frame (5d 2a 4d 18).
	zstdDictFrameMagic = 0x184D2A5D
	// zstdDictMagic starts a dictionary in zstd's format (37 a4 30 ec),
	// as `zstd --train` writes it.
	zstdDictMagic = 0xEC30A437
	// skippableMask and skippableMagic: any of the 16 skippable frame
	// magics, 0x184D2A50 to 0x184D2A5F.
	skippableMask  = 0xFFFFFFF0
	skippableMagic = 0x184D2A50
)

// Bounds of what a scan reads. The spec asks readers to support windows
// and dictionaries up to 8 MiB; warcproxy's frames use 8 MiB windows at
// most. Windows up to 64 MiB are read, so files of other writers that
// chose larger ones are still indexed, and a hostile header cannot make a
// scan allocate gigabytes.
const (
	maxZstdDictionary = 8 << 20
	maxZstdWindow     = 64 << 20
	// maxZstdBlock is the largest block a frame may hold (RFC 8878
	// Block_Maximum_Size).
	maxZstdBlock = 128 << 10
	// zstdHeaderPeek covers the longest frame header: magic, descriptor,
	// window, a 4-byte Dictionary_ID and an 8-byte content size.
	zstdHeaderPeek = 4 + 1 + 1 + 4 + 8
)

type zstdCodec struct{}

var _ Codec = zstdCodec{}

func (zstdCodec) Name() string { return "zstd" }
func (zstdCodec) Ext() string  { return ".zst" }

func (zstdCodec) Sniff(p []byte) bool {
	if len(p) < 4 {
		return false
	}
	m := binary.LittleEndian.Uint32(p)
	return m == ZstdFrameMagic || m == zstdDictFrameMagic
}

func (zstdCodec) NewDecoder() Decoder { return &zstdDecoder{} }

// zstdDecoder reads the frames of one file. The klauspost decoder reads
// ahead, so it is handed each frame through frameReader, which walks the
// frame's block headers and stops exactly at its end.
type zstdDecoder struct {
	started bool   // Skip has run once: the dictionary frame may come only before that
	dict    []byte // the file's dictionary, nil without one
	dictID  uint32
	zr      *zstd.Decoder // made at the first frame, with the dictionary
	frame   frameReader
}

var _ Decoder = (*zstdDecoder)(nil)

// Skip reads the dictionary frame at the start of the file, and any
// extension frame before the next zstd frame.
func (d *zstdDecoder) Skip(src *bufio.Reader) error {
	atStart := !d.started
	d.started = true
	for {
		p, _ := src.Peek(8)
		if len(p) < 4 || binary.LittleEndian.Uint32(p)&skippableMask != skippableMagic {
			return nil // a frame, the end, or what Open then refuses
		}
		if len(p) < 8 {
			return fmt.Errorf("skippable frame header: %w", io.ErrUnexpectedEOF)
		}
		magic, size := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
		if magic == zstdDictFrameMagic && !atStart {
			return errors.New("a dictionary frame after the start of the file")
		}
		atStart = false
		if magic != zstdDictFrameMagic {
			if err := discard(src, 8+int64(size)); err != nil {
				return fmt.Errorf("extension frame of %d bytes: %w", size, err)
			}
			continue
		}
		if size > maxZstdDictionary {
			return fmt.Errorf("dictionary frame of %d bytes, over the %d a reader must take", size, maxZstdDictionary)
		}
		_, _ = src.Discard(8)
		data := make([]byte, size)
		if _, err := io.ReadFull(src, data); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("dictionary frame: %w", err)
		}
		dict, id, err := readZstdDictFrame(data)
		if err != nil {
			return err
		}
		d.dict, d.dictID = dict, id
	}
}

// Open starts the zstd frame at src's position. The frame must carry its
// content size and checksum, and name the file's dictionary if it has one
// (and none otherwise), as the spec requires.
func (d *zstdDecoder) Open(src *bufio.Reader) (io.Reader, error) {
	p, _ := src.Peek(zstdHeaderPeek)
	if len(p) == 0 {
		return nil, io.EOF
	}
	var h zstd.Header
	if err := h.Decode(p); err != nil {
		if len(p) < 4 || binary.LittleEndian.Uint32(p) != ZstdFrameMagic {
			return nil, errors.New("not a zstd frame")
		}
		return nil, fmt.Errorf("zstd frame header: %w", err)
	}
	switch {
	case h.Skippable:
		return nil, errors.New("a skippable frame where a record's frame should start")
	case !h.HasFCS:
		return nil, errors.New("zstd frame without Frame_Content_Size")
	case !h.HasCheckSum:
		return nil, errors.New("zstd frame without Content_Checksum")
	case h.DictionaryID != d.dictID && d.dictID == 0:
		return nil, fmt.Errorf("zstd frame uses dictionary %d, and the file has none", h.DictionaryID)
	case h.DictionaryID != d.dictID:
		return nil, fmt.Errorf("zstd frame names dictionary %d, the file's is %d", h.DictionaryID, d.dictID)
	}
	if d.zr == nil {
		opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow)}
		if d.dict != nil {
			opts = append(opts, zstd.WithDecoderDicts(d.dict))
		}
		zr, err := zstd.NewReader(nil, opts...)
		if err != nil {
			return nil, fmt.Errorf("zstd decoder: %w", err)
		}
		d.zr = zr
	}
	d.frame = frameReader{src: src, left: int64(h.HeaderSize), checksum: h.HasCheckSum}
	if err := d.zr.Reset(&d.frame); err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return d.zr, nil
}

// frameReader hands out one zstd frame from src and then io.EOF, having
// read nothing past the frame: it passes the header through, then each
// block with its 3-byte header, then the checksum after the last block.
type frameReader struct {
	src      *bufio.Reader
	left     int64 // bytes of the current part still to hand out
	checksum bool  // the frame ends with a 4-byte checksum
	last     bool  // the current part ends the frame
}

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 {
		if f.last {
			return 0, io.EOF
		}
		if err := f.nextBlock(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.src.Read(p)
	f.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the frame is cut short
	}
	return n, err
}

// nextBlock reads the next block header (without consuming it) and sets
// the part to hand out: the header and the block's bytes, and the
// checksum after the last block.
func (f *frameReader) nextBlock() error {
	h, err := f.src.Peek(3)
	if len(h) < 3 {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("zstd block header: %w", err)
	}
	v := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
	size := int64(v >> 3)
	switch typ := (v >> 1) & 3; typ {
	case 1: // RLE: one byte repeated size times
		size = 1
	case 3:
		return errors.New("zstd block of the reserved type")
	}
	if size > maxZstdBlock {
		return fmt.Errorf("zstd block of %d bytes, over the %d a block may hold", size, maxZstdBlock)
	}
	f.left = 3 + size
	if v&1 == 1 {
		f.last = true
		if f.checksum {
			f.left += 4
		}
	}
	return nil
}

// readZstdDictFrame reads the content of a dictionary frame (without the
// frame's 8-byte header): a zstd dictionary, or one zstd frame without a
// dictionary that holds it. It returns the dictionary and its ID.
func readZstdDictFrame(data []byte) (dict []byte, id uint32, err error) {
	if len(data) >= 4 && binary.LittleEndian.Uint32(data) == ZstdFrameMagic {
		var h zstd.Header
		if err := h.Decode(data); err != nil {
			return nil, 0, fmt.Errorf("compressed dictionary: %w", err)
		}
		if !h.HasFCS || !h.HasCheckSum || h.DictionaryID != 0 {
			return nil, 0, errors.New("compressed dictionary: its frame must carry its content size and checksum and use no dictionary")
		}
		if h.FrameContentSize > maxZstdDictionary {
			return nil, 0, fmt.Errorf("compressed dictionary of %d bytes, over the %d a reader must take", h.FrameContentSize, maxZstdDictionary)
		}
		zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxZstdDictionary))
		if err != nil {
			return nil, 0, fmt.Errorf("zstd decoder: %w", err)
		}
		defer zr.Close()
		if data, err = zr.DecodeAll(data, nil); err != nil {
			return nil, 0, fmt.Errorf("compressed dictionary: %w", err)
		}
	}
	id, err = ZstdDictionaryID(data)
	if err != nil {
		return nil, 0, fmt.Errorf("dictionary frame: %w", err)
	}
	return data, id, nil
}

// ZstdDictionaryID checks that b is a zstd dictionary (the format `zstd
// --train` writes) that a WARC-zstd file can carry, and returns its ID:
// not 0 (frames name their dictionary by it) and at most
// maxZstdDictionary bytes.
func ZstdDictionaryID(b []byte) (uint32, error) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != zstdDictMagic {
		return 0, errors.New("not a zstd dictionary (it must start with 37 a4 30 ec, as `zstd --train` writes it)")
	}
	if len(b) > maxZstdDictionary {
		return 0, fmt.Errorf("zstd dictionary of %d bytes, over the %d the WARC-zstd spec asks readers to take", len(b), maxZstdDictionary)
	}
	d, err := zstd.InspectDictionary(b)
	if err != nil {
		return 0, fmt.Errorf("not a valid zstd dictionary: %w", err)
	}
	return d.ID(), nil
}

// ZstdHeadLen is the length of the dictionary frame that starts a
// .warc.zst file whose first bytes are p (at least 8 of them), or 0 if it
// starts with none.
func ZstdHeadLen(p []byte) int64 {
	if len(p) < 8 || binary.LittleEndian.Uint32(p) != zstdDictFrameMagic {
		return 0
	}
	return 8 + int64(binary.LittleEndian.Uint32(p[4:]))
}

// ZstdDictFrame returns the dictionary frame that starts a file whose
// frames use dict: the skippable frame 0x184D2A5D with the dictionary as
// it is, uncompressed. The spec allows both; a compressed one would save
// tens of KB per file (0.01% of a 1 GB file), and an uncompressed one can
// be cut out of the file and given to `zstd -D` as it is.
func ZstdDictFrame(dict []byte) []byte {
	b := make([]byte, 8, 8+len(dict))
	binary.LittleEndian.PutUint32(b, zstdDictFrameMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(dict)))
	return append(b, dict...)
}
