package warcscan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Buffers of a Scanner.
const (
	fileBuf = 256 << 10 // reads of the file
	unitBuf = 64 << 10  // decompressed bytes of a unit
)

// DefaultMaxHeader is the longest header a Scanner keeps when
// Options.MaxHeader is 0.
const DefaultMaxHeader = 1 << 20

var (
	// ErrNotWhole marks where a scan stopped because the data from there on
	// is not a whole record: cut short, bad checksum, not a record at all.
	ErrNotWhole = errors.New("not a whole warc record")
	// ErrHeaderTooLong is a whole header longer than Options.MaxHeader.
	ErrHeaderTooLong = errors.New("warc header too long")
)

// recordEnd follows every block.
var recordEnd = []byte("\r\n\r\n")

// Options say how a Scanner reads.
type Options struct {
	// Codec is the file's compression; nil sniffs it from the first bytes.
	Codec Codec
	// MaxHeader bounds a kept header (Header.Raw), version line and blank
	// line included; a longer one is ErrHeaderTooLong. 0 means
	// DefaultMaxHeader.
	MaxHeader int
	// SkipHeaders reads headers without keeping them: Header.Raw is nil
	// and a header of any length, a URI of megabytes, is read in flat
	// memory. For scans that only need where records end.
	SkipHeaders bool
}

// Record is the record a Scanner is on. It is valid until the next call
// of Next.
type Record struct {
	// Offset is where the record starts in the file: its first byte, or
	// the first byte of its unit in a compressed file.
	Offset int64
	// Length is the record's length in the file, up to and including the
	// "\r\n\r\n" after its block (in a compressed file, its unit's length).
	// It is set by Finish.
	Length int64
	Header Header
	// Block reads the record's Content-Length bytes of block. Data ending
	// before them reads as io.ErrUnexpectedEOF.
	Block io.Reader
}

// Scanner walks the records of a WARC file from its start; see the
// package documentation for what it takes as a whole record.
type Scanner struct {
	cr     countingReader
	src    *bufio.Reader // over cr
	codec  Codec
	dec    Decoder       // nil for None
	rd     *bufio.Reader // the records' bytes: src, or over the unit
	unitRd *bufio.Reader // reused over each unit

	maxHeader int  // bytes a kept header may have
	keep      bool // keep headers in raw
	line      []byte
	raw       []byte

	rec      Record
	block    blockReader
	inRecord bool  // Next returned rec and Finish has not run
	err      error // why the scan ended; returned by every later Next

	end, records int64
}

// New returns a Scanner of the WARC file r, read from its current
// position, which counts as offset 0.
func New(r io.Reader, opts Options) *Scanner {
	s := &Scanner{cr: countingReader{r: r}, maxHeader: opts.MaxHeader, keep: !opts.SkipHeaders}
	if s.maxHeader <= 0 {
		s.maxHeader = DefaultMaxHeader
	}
	s.src = bufio.NewReaderSize(&s.cr, fileBuf)
	s.codec = opts.Codec
	if s.codec == nil {
		// A read error here is found again, and reported, by Next.
		magic, _ := s.src.Peek(sniffLen)
		s.codec = Sniff(magic)
	}
	s.dec = s.codec.NewDecoder()
	s.rd = s.src
	if s.dec != nil {
		s.unitRd = bufio.NewReaderSize(nil, unitBuf)
		s.rd = s.unitRd
	}
	s.block.s = s
	return s
}

// Codec is the file's codec: Options.Codec or the one sniffed.
func (s *Scanner) Codec() Codec { return s.codec }

// End is the offset just after the last whole record, where a file whose
// scan stopped at ErrNotWhole can be cut to keep only whole records.
func (s *Scanner) End() int64 { return s.end }

// Records is how many whole records were scanned, up to End.
func (s *Scanner) Records() int64 { return s.records }

// pos is the offset in the file of the next byte src hands out.
func (s *Scanner) pos() int64 { return s.cr.n - int64(s.src.Buffered()) }

// Next finishes the current record if the caller has not (see Finish),
// then reads the header of the next record and returns it, its block
// unread. At the end of the file, exactly after a whole record (or in an
// empty file), it returns io.EOF. Otherwise a scan ends with an error
// wrapping ErrNotWhole, ErrHeaderTooLong, or the error of a read of the
// file; every later call returns the same error.
func (s *Scanner) Next() (*Record, error) {
	if err := s.Finish(); err != nil {
		return nil, err
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.dec != nil {
		if err := s.dec.Skip(s.src); err != nil {
			return nil, s.fail(s.pos(), err)
		}
	}
	start := s.pos()
	if err := s.open(); err != nil {
		return nil, s.fail(start, err)
	}
	s.rec = Record{Offset: start, Block: &s.block}
	if err := s.readHeader(&s.rec.Header); err != nil {
		return nil, s.fail(start, err)
	}
	s.block.n = s.rec.Header.ContentLength
	s.inRecord = true
	return &s.rec, nil
}

// open starts the next record: the next unit of a compressed file. It
// returns io.EOF at the end of the file.
func (s *Scanner) open() error {
	if s.dec == nil {
		_, err := s.src.Peek(1)
		return err
	}
	unit, err := s.dec.Open(s.src)
	if err != nil {
		return err
	}
	s.unitRd.Reset(unit)
	return nil
}

// Finish reads what is left of the current record: the rest of its block
// (without keeping it), the "\r\n\r\n" after it and, in a compressed file,
// the end of its unit, whose checksum is then checked. It sets the
// record's Length. Its errors are those of Next, which calls it; with no
// record to finish it does nothing.
func (s *Scanner) Finish() error {
	if !s.inRecord {
		return nil
	}
	s.inRecord = false
	if err := s.finish(); err != nil {
		return s.fail(s.rec.Offset, err)
	}
	s.end = s.pos()
	s.rec.Length = s.end - s.rec.Offset
	s.records++
	return nil
}

func (s *Scanner) finish() error {
	if err := discard(s.rd, s.block.n); err != nil {
		return fmt.Errorf("block of %d bytes: %w", s.rec.Header.ContentLength, err)
	}
	s.block.n = 0
	end, err := s.rd.Peek(len(recordEnd))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("end of record: %w", err)
	}
	if !bytes.Equal(end, recordEnd) {
		return errors.New("block not followed by CRLF CRLF")
	}
	_, _ = s.rd.Discard(len(recordEnd))
	if s.dec == nil {
		return nil
	}
	// Exactly one record per unit: the unit ends here, and reaching its
	// end checks its checksum and length.
	if _, err := s.rd.Peek(1); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("more data after the record in its %s unit", s.codec.Name())
		}
		return err
	}
	return nil
}

// fail ends the scan with err, met in the record (or unit) at offset at,
// and returns the error the scan ends with: a read error of the file
// before anything else, since a failing disk must not pass for a file
// that goes bad; then io.EOF at the end of the file; then
// ErrHeaderTooLong; else ErrNotWhole.
func (s *Scanner) fail(at int64, err error) error {
	switch {
	case s.cr.err != nil:
		s.err = fmt.Errorf("reading warc file at offset %d: %w", s.cr.n, s.cr.err)
	case err == io.EOF: // only open returns it bare: no byte after a whole record
		s.err = io.EOF
	case errors.Is(err, ErrHeaderTooLong):
		s.err = fmt.Errorf("record at offset %d: %w (over %d bytes)", at, ErrHeaderTooLong, s.maxHeader)
	default:
		kind := s.codec.Name() + "-compressed"
		if s.codec == None {
			kind = "uncompressed"
		}
		s.err = fmt.Errorf("%w at offset %d (%s): %v", ErrNotWhole, at, kind, err)
	}
	return s.err
}

// discard skips n bytes of br.
func discard(br *bufio.Reader, n int64) error {
	for n > 0 {
		step := int(min(n, 1<<30))
		m, err := br.Discard(step)
		n -= int64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// blockReader reads the block of the current record from the scanner.
type blockReader struct {
	s *Scanner
	n int64 // bytes of the block left
}

func (b *blockReader) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.s.rd.Read(p)
	b.n -= int64(n)
	if err == io.EOF && b.n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// countingReader counts the bytes read from r and keeps the first read
// error other than io.EOF, so that a scan can tell a failing disk from a
// file that ends or goes bad.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}
