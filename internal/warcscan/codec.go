package warcscan

import (
	"bufio"
	"io"
	"strings"
)

// Codec is a compression of WARC files: how the records sit in the file
// and how to read them back.
type Codec interface {
	// Name names the codec in logs and errors: "gzip", "zstd", "none".
	Name() string
	// Ext is what a file name adds after ".warc": ".gz", ".zst"; "" for
	// none.
	Ext() string
	// Sniff reports whether p, the first bytes of a file (fewer in a short
	// file), start a file of this codec.
	Sniff(p []byte) bool
	// NewDecoder returns the state that reads the units of one file. It
	// returns nil for a codec that does not compress: the records of such
	// a file follow each other in it.
	NewDecoder() Decoder
}

// Decoder reads the units of one compressed file, one record per unit,
// from the scanner's buffered reader of the file. The scanner knows where
// a unit ends by where src stands when the unit's reader returns io.EOF,
// so a Decoder must read from src nothing beyond the unit it reads.
type Decoder interface {
	// Skip reads past what stands at src's position and holds no record
	// but belongs to the format (the skippable frame that holds a zstd
	// dictionary, which the decoder then keeps), or does nothing. The
	// scanner calls it before each unit, also at the end of src (where it
	// returns nil); what it reads is no record's.
	Skip(src *bufio.Reader) error
	// Open starts the unit at src's position and returns a reader of its
	// decompressed bytes, which returns io.EOF at the end of the unit,
	// after checking the unit's checksum. Open returns io.EOF itself if
	// src holds no further byte, and another error if what is there does
	// not start a unit. The reader is used until the next call of Open.
	Open(src *bufio.Reader) (io.Reader, error)
}

// None is the codec of uncompressed .warc files.
var None Codec = noneCodec{}

type noneCodec struct{}

var _ Codec = noneCodec{}

func (noneCodec) Name() string        { return "none" }
func (noneCodec) Ext() string         { return "" }
func (noneCodec) Sniff([]byte) bool   { return false }
func (noneCodec) NewDecoder() Decoder { return nil }

// compressed lists the codecs that compress, in the order Sniff and
// ForName try them. A new codec is added here.
var compressed = []Codec{Gzip, Zstd}

// sniffLen is how many bytes of a file Sniff needs: enough for any magic
// number (gzip's is 2 bytes, zstd's 4, a zstd skippable frame's 4).
const sniffLen = 8

// Sniff returns the codec whose magic number p, the first bytes of a file,
// starts with, or None.
func Sniff(p []byte) Codec {
	for _, c := range compressed {
		if c.Sniff(p) {
			return c
		}
	}
	return None
}

// ForName returns the codec of a file named like NAME.warc plus the
// codec's Ext (NAME.warc.gz: Gzip, NAME.warc.zst: Zstd, NAME.warc: None),
// or nil for a name that is not a WARC file's.
func ForName(name string) Codec {
	for _, c := range compressed {
		if strings.HasSuffix(name, ".warc"+c.Ext()) {
			return c
		}
	}
	if strings.HasSuffix(name, ".warc") {
		return None
	}
	return nil
}

// ByName returns the codec named name ("gzip", "zstd", "none"), or nil.
func ByName(name string) Codec {
	for _, c := range append([]Codec{None}, compressed...) {
		if c.Name() == name {
			return c
		}
	}
	return nil
}
