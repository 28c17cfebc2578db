package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nlnwa/gowarc/v3"
)

// The sweep's records check: every successful request through a recording
// proxy must have left one capture (a response or revisit record) in its
// WARCs.

// scanWARCs sums the sizes of the WARC files under dir and counts their
// response and revisit records (one per capture), reading without
// validation.
func scanWARCs(dir string) (size, records int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isWARCName(d.Name()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size += fi.Size()
		n, err := countCaptures(path)
		records += n
		return err
	})
	return size, records, err
}

// countCaptures counts the response and revisit records of one WARC file.
func countCaptures(path string) (int64, error) {
	r, err := openWARC(path, gowarc.WithNoValidation())
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer r.Close()
	var n int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading %s at %d: %w", path, rec.Offset, err)
		}
		if rec.WarcRecord != nil {
			if t := rec.WarcRecord.Type(); t == gowarc.Response || t == gowarc.Revisit {
				n++
			}
		}
		_ = rec.Close()
	}
}
