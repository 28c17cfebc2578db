package writer

import (
	"io"
	"time"
)

// Capture is the unit the writer pool takes from the proxy: the records of
// one exchange (response or revisit, then request, ...), written together into
// one file, each record as its own gzip member.
type Capture struct {
	// Prefix selects the file series ({prefix} in the filename template).
	// Empty means the pool's default prefix.
	Prefix string
	// Records in the order they are written.
	Records []Record
	// Done, if set, is called exactly once: with nil after every record of the
	// capture is written to the open file, or with the error that made the
	// pool give up on it (only at a forced shutdown, an error wrapping
	// ErrClosed, or when a block cannot be read). The proxy releases the
	// capture's spool in it.
	//
	// "Written" means handed to the operating system (the pool buffers, and
	// calls Done once the buffer holding the capture is written out, which
	// happens at the latest when the queue runs empty); files are synced when
	// they are closed. Done runs on a writer goroutine: keep it short.
	// Done is not called for a capture whose Enqueue returned an error.
	Done func(err error)

	// File and Offset are set by the pool before Done(nil): the path of the
	// WARC file the capture went into (its final name, without ".open") and
	// the offset of its first record's gzip member, as a CDX index or crawl
	// log names them.
	File   string
	Offset int64
}

// Record is one WARC record to write.
type Record struct {
	Type        string    // WARC-Type: response, request, revisit, resource, metadata
	ID          string    // WARC-Record-ID including <>; the pool assigns one if empty
	Date        time.Time // WARC-Date; the pool uses the time of writing if zero
	TargetURI   string    // WARC-Target-URI; omitted if empty
	ContentType string    // Content-Type of the block; omitted if empty
	// Fields are further WARC header fields, written after the standard ones
	// in this order (WARC-IP-Address, WARC-Concurrent-To,
	// WARC-Payload-Digest, WARC-Truncated, ...).
	Fields []Field
	// Block is read from BlockOffset for BlockLength bytes. It must stay
	// readable until Done is called, and may be read more than once.
	Block       io.ReaderAt
	BlockOffset int64
	BlockLength int64
	// BlockDigest is the WARC-Block-Digest value ("sha1:..."); the pool
	// computes it when empty (reading the block one more time).
	//
	// ID, Date and BlockDigest, when filled in by the pool, are stored back
	// into the Record before Done is called.
	BlockDigest string
}

// Field is one WARC header field.
type Field struct {
	Name, Value string
}
