package warccheck

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/warcproxy/warcproxy/internal/testutil/zstdcli"
)

// A .warc.zst file is checked as the WARC-zstd specification asks of one:
// its layout is walked here (the dictionary frame, if any, only at the
// start; then zstd frames, each with Frame_Content_Size and
// Content_Checksum, naming the file's dictionary if it has one), Debian's
// zstd command decompresses it (with the dictionary, given as -D), and both
// readers then read the decompressed bytes, each frame of which must hold
// exactly one record. Offsets reported are those of the frames in the
// .warc.zst file.
//
// The walk shares no code with internal/warcscan, which crash recovery and
// the CDXJ indexer read these files with.

// Magic numbers, little-endian.
const (
	zstdFrameMagic     = 0xFD2FB528
	zstdDictFrameMagic = 0x184D2A5D
	zstdDictMagic      = 0xEC30A437
)

// zstdFile is a .warc.zst file decompressed, and where its frames are.
type zstdFile struct {
	plain  string      // the decompressed bytes, in a temporary .warc file
	frames []zstdFrame // in file order
}

// zstdFrame is one zstd frame: where it starts in the .warc.zst file, and
// where its content starts in the decompressed file and how long it is.
type zstdFrame struct {
	off, plainOff, size int64
}

// fileOffset maps an offset in the decompressed file to the offset of the
// frame whose content starts there, or -1.
func (z *zstdFile) fileOffset(plainOff int64) int64 {
	for _, f := range z.frames {
		if f.plainOff == plainOff {
			return f.off
		}
	}
	return -1
}

func isZstdName(path string) bool {
	return strings.HasSuffix(strings.TrimSuffix(path, ".open"), ".warc.zst")
}

// openZstd walks the layout of the .warc.zst file at path, reporting what
// breaks the spec to r, and decompresses it with the zstd command into
// tmpDir. It returns nil if the file cannot be decompressed.
func openZstd(r *reporter, path, tmpDir string) *zstdFile {
	r.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		r.errorf("%s: %v", path, err)
		return nil
	}
	z := &zstdFile{}
	dict, problems := walkZstd(data, z, func(compressed []byte) []byte {
		return zstdcli.Run(r.t, compressed, "-q", "-d", "-c")
	})
	for _, p := range problems {
		r.errorf("%s: %s", path, p)
	}
	args := []string{"-q", "-d", "-c"}
	if dict != nil {
		d := filepath.Join(tmpDir, filepath.Base(path)+".dict")
		if err := os.WriteFile(d, dict, 0o644); err != nil {
			r.errorf("%s: %v", path, err)
			return nil
		}
		args = append(args, "-D", d)
	}
	plain, err := zstdcli.Try(r.t, nil, append(args, path)...)
	if err != nil {
		r.errorf("%s: the zstd command cannot decompress it: %v", path, err)
		return nil
	}
	var sum int64
	for _, f := range z.frames {
		sum += f.size
	}
	if sum != int64(len(plain)) {
		r.errorf("%s: the frames' content sizes add up to %d bytes, zstd -d gives %d", path, sum, len(plain))
	}
	z.plain = filepath.Join(tmpDir, strings.TrimSuffix(filepath.Base(path), ".open")+".warc")
	if err := os.WriteFile(z.plain, plain, 0o644); err != nil {
		r.errorf("%s: %v", path, err)
		return nil
	}
	return z
}

// walkZstd walks data, a .warc.zst file, filling in z.frames. It returns
// the file's dictionary (nil without one; a compressed one is given to
// decompress) and what it found against the spec.
func walkZstd(data []byte, z *zstdFile, decompress func([]byte) []byte) (dict []byte, problems []string) {
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var dictID uint32
	pos, plainOff := int64(0), int64(0)
	for pos < int64(len(data)) {
		rest := data[pos:]
		if len(rest) < 4 {
			problem("offset %d: %d bytes that are not a frame", pos, len(rest))
			break
		}
		switch m := binary.LittleEndian.Uint32(rest); {
		case m&0xFFFFFFF0 == 0x184D2A50: // skippable
			if len(rest) < 8 || int64(len(rest)) < 8+int64(binary.LittleEndian.Uint32(rest[4:])) {
				problem("offset %d: skippable frame cut short", pos)
				return dict, problems
			}
			n := int64(binary.LittleEndian.Uint32(rest[4:]))
			switch {
			case m == zstdDictFrameMagic && pos != 0:
				problem("offset %d: a dictionary frame after the start of the file", pos)
			case m == zstdDictFrameMagic:
				dict = readDict(rest[8:8+n], decompress, problem)
				if len(dict) >= 8 {
					dictID = binary.LittleEndian.Uint32(dict[4:])
				}
			case pos == 0:
				problem("the file starts with an extension frame (the spec forbids it)")
			}
			pos += 8 + n
		case m == zstdFrameMagic:
			n, size, ok := walkFrame(rest, dictID, func(format string, args ...any) {
				problem("zstd frame at offset %d: "+format, append([]any{pos}, args...)...)
			})
			if !ok {
				return dict, problems
			}
			z.frames = append(z.frames, zstdFrame{off: pos, plainOff: plainOff, size: size})
			pos += n
			plainOff += size
		default:
			problem("offset %d: bytes that are not a zstd frame", pos)
			return dict, problems
		}
	}
	if len(z.frames) == 0 {
		problem("no zstd frame (a WARC-zstd file holds at least one record)")
	}
	return dict, problems
}

// readDict reads a dictionary frame's content: a dictionary, or one zstd
// frame (content size and checksum, no dictionary) holding one.
func readDict(b []byte, decompress func([]byte) []byte, problem func(string, ...any)) []byte {
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == zstdFrameMagic {
		var h zstd.Header
		if err := h.Decode(b); err != nil || !h.HasFCS || !h.HasCheckSum || h.DictionaryID != 0 {
			problem("compressed dictionary: its frame must carry its content size and checksum and use no dictionary (%v)", err)
		}
		b = decompress(b)
	}
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != zstdDictMagic || binary.LittleEndian.Uint32(b[4:]) == 0 {
		problem("the dictionary frame holds no zstd dictionary with an ID")
		return nil
	}
	return b
}

// walkFrame walks the zstd frame at the start of b: its header, its blocks
// and its checksum. It returns the frame's length and content size.
func walkFrame(b []byte, dictID uint32, problem func(string, ...any)) (n, size int64, ok bool) {
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		problem("header: %v", err)
		return 0, 0, false
	}
	if !h.HasFCS {
		problem("no Frame_Content_Size (the spec requires it)")
	}
	if !h.HasCheckSum {
		problem("no Content_Checksum (the spec requires it)")
	}
	if h.DictionaryID != dictID {
		problem("Dictionary_ID %d, the file's dictionary is %d (0: none)", h.DictionaryID, dictID)
	}
	pos := int64(h.HeaderSize)
	for {
		if int64(len(b)) < pos+3 {
			problem("cut short in a block header")
			return 0, 0, false
		}
		v := uint32(b[pos]) | uint32(b[pos+1])<<8 | uint32(b[pos+2])<<16
		bsize := int64(v >> 3)
		switch (v >> 1) & 3 {
		case 1:
			bsize = 1
		case 3:
			problem("block of the reserved type")
			return 0, 0, false
		}
		pos += 3 + bsize
		if v&1 == 1 {
			break
		}
	}
	if h.HasCheckSum {
		pos += 4
	}
	if int64(len(b)) < pos {
		problem("cut short")
		return 0, 0, false
	}
	return pos, int64(h.FrameContentSize), true
}

// readZstd reads the records of a decompressed .warc.zst file frame by
// frame: each frame's content must be exactly one record.
func (fr *fileReader) readZstd(z *zstdFile) {
	f, err := os.Open(z.plain)
	if err != nil {
		fr.problemf("%v", err)
		return
	}
	defer f.Close()
	mb := bufio.NewReaderSize(nil, maxHeaderPeek)
	for _, fm := range z.frames {
		mb.Reset(io.NewSectionReader(f, fm.plainOff, fm.size))
		n, parsed := 0, 0
		for {
			if _, err := mb.Peek(1); err != nil {
				if !errors.Is(err, io.EOF) {
					fr.problemf("zstd frame at offset %d: %v", fm.off, err)
					return
				}
				break
			}
			n++
			if !fr.readRecord(mb, fm.off) {
				break
			}
			parsed++
		}
		switch {
		case n == 0:
			fr.problemf("zstd frame at offset %d is empty", fm.off)
		case n > 1 && parsed == n:
			fr.problemf("zstd frame at offset %d holds %d records: every record must be its own zstd frame", fm.off, n)
		case n > 1:
			fr.problemf("zstd frame at offset %d has bytes after its first record: every record must be its own zstd frame", fm.off)
		}
	}
	fr.checkFirst()
}
