package writer

import (
	"fmt"
	"io"
	"time"
)

// recordEnd follows every block.
var recordEnd = []byte("\r\n\r\n")

// readError marks an error reading a capture's block, as opposed to writing
// the file.
type readError struct{ err error }

func (e *readError) Error() string { return "reading block: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// writeRecord appends one record to wf: one gzip member with Gzip, at the
// level its block calls for (gzipSet.open), or one zstd frame with Zstd.
// The record's bytes are the same whatever the compression. It fills in
// the record's ID, Date and BlockDigest if they are empty.
func (w *worker) writeRecord(wf *warcFile, r *Record) error {
	if r.ID == "" {
		id, err := newRecordID()
		if err != nil {
			return &readError{err}
		}
		r.ID = id
	}
	if r.Date.IsZero() {
		r.Date = time.Now()
	}
	if r.BlockDigest == "" {
		w.hash.Reset()
		if err := w.copyBlock(w.hash, r); err != nil {
			return err
		}
		w.sum = w.hash.Sum(w.sum[:0])
		r.BlockDigest = w.p.opts.Digest.Format(w.sum, w.p.opts.Base32)
	}
	w.hdr = appendHeader(w.hdr[:0], header{version: w.p.opts.WARCVersion, warcinfoID: wf.warcinfoID}, r)

	body := func(dst io.Writer) error { return w.writeParts(dst, r) }
	switch {
	case w.gz != nil:
		return w.gz.write(wf.out, r, body)
	case w.zst != nil:
		return w.zst.write(wf.out, r, int64(len(w.hdr))+r.BlockLength+int64(len(recordEnd)), body)
	}
	return body(wf.out)
}

// writeParts writes the record's header, block and end to dst.
func (w *worker) writeParts(dst io.Writer, r *Record) error {
	if _, err := dst.Write(w.hdr); err != nil {
		return err
	}
	if err := w.copyBlock(dst, r); err != nil {
		return err
	}
	_, err := dst.Write(recordEnd)
	return err
}

// copyBlock copies the record's block to dst through the worker's buffer.
// Read failures come back as *readError.
func (w *worker) copyBlock(dst io.Writer, r *Record) error {
	off, left := r.BlockOffset, r.BlockLength
	for left > 0 {
		b := w.cbuf[:min(int64(len(w.cbuf)), left)]
		n, err := r.Block.ReadAt(b, off)
		if n < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return &readError{fmt.Errorf("block of %d bytes at offset %d: %w", r.BlockLength, r.BlockOffset, err)}
		}
		if _, err := dst.Write(b); err != nil {
			return err
		}
		off += int64(n)
		left -= int64(n)
	}
	return nil
}
