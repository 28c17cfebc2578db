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
	// pool give up on it (only at a forced shutdown). The proxy releases the
	// capture's spool in it.
	Done func(err error)
}

// Record is one WARC record to write.
type Record struct {
	Type        string    // WARC-Type: response, request, revisit, resource, metadata
	ID          string    // WARC-Record-ID including <>; the pool assigns one if empty
	Date        time.Time // WARC-Date
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
	// computes it when empty.
	BlockDigest string
}

// Field is one WARC header field.
type Field struct {
	Name, Value string
}
