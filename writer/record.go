package writer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/http/httpguts"
)

// Header fields the pool writes itself; Record.Fields must not repeat them.
var ownFields = []string{
	"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
	"WARC-Warcinfo-ID", "WARC-Block-Digest", "Content-Type", "Content-Length",
	"WARC-Filename",
}

// checkCapture validates a capture before the pool takes it, so that a bad
// capture fails its Enqueue instead of breaking a file.
func checkCapture(c *Capture) error {
	if c == nil {
		return errors.New("nil capture")
	}
	if c.Prefix != "" {
		if err := checkPrefix(c.Prefix); err != nil {
			return err
		}
	}
	if len(c.Records) == 0 {
		return errors.New("capture has no records")
	}
	for i := range c.Records {
		if err := checkRecord(&c.Records[i]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	return nil
}

func checkRecord(r *Record) error {
	if !httpguts.ValidHeaderFieldName(r.Type) {
		return fmt.Errorf("invalid WARC-Type %q", r.Type)
	}
	if r.ID != "" && (!strings.HasPrefix(r.ID, "<") || !strings.HasSuffix(r.ID, ">") || len(r.ID) < 3) {
		return fmt.Errorf("WARC-Record-ID %q is not enclosed in <>", r.ID)
	}
	if r.BlockOffset < 0 || r.BlockLength < 0 {
		return fmt.Errorf("negative block offset or length (%d, %d)", r.BlockOffset, r.BlockLength)
	}
	if r.Block == nil && r.BlockLength > 0 {
		return errors.New("no block to read")
	}
	for _, v := range [...]string{r.ID, r.TargetURI, r.ContentType, r.BlockDigest} {
		if err := checkValue(v); err != nil {
			return err
		}
	}
	for _, f := range r.Fields {
		if err := checkFieldName(f.Name); err != nil {
			return err
		}
		for _, own := range ownFields {
			if strings.EqualFold(f.Name, own) {
				return fmt.Errorf("field %s is written by the pool", f.Name)
			}
		}
		if err := checkValue(f.Value); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

func checkFieldName(name string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("invalid header field name %q", name)
	}
	return nil
}

// checkValue rejects control characters other than tab: a CR or LF would let
// a value (a target URI from a client, say) inject header lines.
func checkValue(v string) error {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("control character %#x in header value %q", c, v)
		}
	}
	return nil
}

// header is the part of a record header that is not in Record: what the
// file and the pool contribute.
type header struct {
	version    string // "1.0" or "1.1"
	warcinfoID string // empty on the warcinfo record itself
}

// appendHeader appends the record header, ending with the blank line, to b.
// The field order is fixed: WARC/<ver>, WARC-Type, WARC-Record-ID,
// WARC-Date, WARC-Target-URI, WARC-Warcinfo-ID, Record.Fields,
// WARC-Block-Digest, Content-Type, Content-Length.
func appendHeader(b []byte, h header, r *Record) []byte {
	b = append(b, "WARC/"...)
	b = append(b, h.version...)
	b = append(b, "\r\n"...)
	b = appendField(b, "WARC-Type", r.Type)
	b = appendField(b, "WARC-Record-ID", r.ID)
	b = append(b, "WARC-Date: "...)
	b = appendDate(b, r.Date, h.version)
	b = append(b, "\r\n"...)
	if r.TargetURI != "" {
		b = appendField(b, "WARC-Target-URI", r.TargetURI)
	}
	if h.warcinfoID != "" {
		b = appendField(b, "WARC-Warcinfo-ID", h.warcinfoID)
	}
	for _, f := range r.Fields {
		b = appendField(b, f.Name, f.Value)
	}
	b = appendField(b, "WARC-Block-Digest", r.BlockDigest)
	if r.ContentType != "" {
		b = appendField(b, "Content-Type", r.ContentType)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, r.BlockLength, 10)
	return append(b, "\r\n\r\n"...)
}

func appendField(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	b = append(b, value...)
	return append(b, "\r\n"...)
}

// appendDate formats a WARC-Date: seconds in WARC 1.0, microseconds in 1.1.
func appendDate(b []byte, t time.Time, version string) []byte {
	if version == "1.1" {
		return t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	}
	return t.UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
}

// newRecordID returns a fresh "<urn:uuid:...>" record id.
func newRecordID() (string, error) {
	u, err := uuid.NewRandom()
	if err != nil {
		return "", fmt.Errorf("generating record id: %w", err)
	}
	var b [len("<urn:uuid:>") + 36]byte
	n := copy(b[:], "<urn:uuid:")
	hex.Encode(b[n:], u[0:4])
	b[n+8] = '-'
	hex.Encode(b[n+9:], u[4:6])
	b[n+13] = '-'
	hex.Encode(b[n+14:], u[6:8])
	b[n+18] = '-'
	hex.Encode(b[n+19:], u[8:10])
	b[n+23] = '-'
	hex.Encode(b[n+24:], u[10:16])
	b[len(b)-1] = '>'
	return string(b[:]), nil
}

// recordTypes are the WARC-Type values counted separately in Stats; other
// types are counted under "other".
var recordTypes = [...]string{
	"warcinfo", "response", "request", "revisit", "resource", "metadata",
	"conversion", "continuation", "other",
}

func typeIndex(t string) int {
	for i, s := range recordTypes[:len(recordTypes)-1] {
		if s == t {
			return i
		}
	}
	return len(recordTypes) - 1
}
