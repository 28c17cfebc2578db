package upload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// description is what a completion event says of a file's content.
type description struct {
	sha256              string
	crc32               uint32
	records             int64
	firstDate, lastDate string // WARC-Date as written
}

// describe reads f once from its start: its SHA-256 and CRC32 and, for a WARC when
// records is set, the count of its records and their first and last
// WARC-Date (a WARC is decompressed for that, so only when a completion
// event needs it).
func describe(f *os.File, records bool) (description, error) {
	h, c := sha256.New(), crc32.NewIEEE()
	r := io.TeeReader(io.NewSectionReader(f, 0, 1<<62), io.MultiWriter(h, c))
	var d description
	if records {
		if err := d.scan(r); err != nil {
			return d, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
	}
	// What the scan left (all of it without one) is hashed too.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return d, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	d.sha256, d.crc32 = hex.EncodeToString(h.Sum(nil)), c.Sum32()
	return d, nil
}

// scan counts the records and notes the first and last WARC-Date. A file
// that does not scan whole is still shipped as it is: the count is of
// its whole records.
func (d *description) scan(r io.Reader) error {
	s := warcscan.New(r, warcscan.Options{})
	for {
		rec, err := s.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return err // the file, not its content
			}
			return nil
		}
		d.records++
		if date, ok := rec.Header.Get("WARC-Date"); ok {
			if d.firstDate == "" {
				d.firstDate = date
			}
			d.lastDate = date
		}
	}
}
