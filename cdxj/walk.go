package cdxj

import (
	"bufio"
	"io"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// Visitor receives what Walk finds in a WARC file.
type Visitor struct {
	// Line gets each index line, "URLKEY TIMESTAMP {json}\n", in the order
	// of the records (not sorted; a response paired with the request after
	// it comes once the request is read). The slice is the callee's to
	// keep. An error stops the walk and is returned by Walk.
	Line func(line []byte) error
	// Response, if not nil, gets each response or revisit record that has
	// an HTTP head, before the record's index line (the line with its Offset,
	// which names the method of the request it answered when that was not
	// GET). Response.Body is valid only during the call, and need not be
	// read. An error stops the walk and is returned by Walk.
	Response func(*Response) error
}

// Response is a response record as Walk hands it to Visitor.Response.
type Response struct {
	RecordID  string // WARC-Record-ID, with its <>
	TargetURI string // WARC-Target-URI
	// Offset is where the record starts in the file (its gzip member in a
	// .warc.gz), as its index line's "offset" has it.
	Offset int64
	Date   string // WARC-Date, as written
	// PayloadDigest is WARC-Payload-Digest as written ("sha1:BASE32"), ""
	// when the record has none.
	PayloadDigest string
	// Status is the status code as the index line's "status" has it
	// ("200"), or "" when the status line has none.
	Status string
	// Body reads the HTTP body as recorded, up to the end of the block:
	// still in its Transfer-Encoding and Content-Encoding.
	Body io.Reader
	// Revisit: a revisit record, whose HTTP head stands for the response
	// of RefersToURI (WARC-Refers-To-Target-URI, "" when not given); its
	// Body is what the block holds after the head, usually nothing.
	Revisit     bool
	RefersToURI string
	header      headers
}

// Header returns the value of the HTTP header field name (in any case),
// repeated fields joined with ", ", or "" when there is none.
func (r *Response) Header(name string) string {
	v, _ := r.header.get(name)
	return v
}

// Walk reads the WARC file r (.warc.gz with one record per gzip member, or
// .warc, told by its first bytes) from its current position, as IndexFile
// does, and hands each index line, and each response if asked, to v. The
// lines name the file filename. Memory does not grow with the file: each
// record is streamed, and nothing is kept from one line to the next but
// the record waiting for its pair.
func Walk(r io.Reader, filename string, v Visitor) error {
	ws := warcscan.New(r, warcscan.Options{MaxHeader: maxHeadBytes})
	block := bufio.NewReaderSize(nil, 4096)
	var lineErr error
	ix := indexer{filename: filename, out: func(line []byte) {
		if lineErr == nil {
			lineErr = v.Line(line)
		}
	}}
	var visit func(*record, *bufio.Reader) error
	if v.Response != nil {
		visit = func(rec *record, body *bufio.Reader) error {
			return v.Response(&Response{
				RecordID:      rec.recordID,
				TargetURI:     rec.targetURI,
				Offset:        rec.offset,
				Date:          rec.date,
				PayloadDigest: rec.payloadDig,
				Status:        rec.http.status(),
				Body:          body,
				Revisit:       rec.warcType == "revisit",
				RefersToURI:   rec.refersToURI,
				header:        rec.http.fields,
			})
		}
	}
	for {
		rec, err := nextRecord(ws, block, visit)
		if err != nil {
			return err
		}
		ix.add(rec)
		if lineErr != nil {
			return lineErr
		}
		if rec == nil {
			return nil
		}
	}
}
