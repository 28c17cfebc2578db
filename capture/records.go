package capture

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/writer"
)

// records turns a finished exchange into the writer's records: response
// (or a revisit of original, when not nil), then request, linked by
// WARC-Concurrent-To.
func (s *Stage) records(ex *Exchange, original *dedup.Entry) (*writer.Capture, error) {
	if err := ex.Response.Err(); err != nil {
		return nil, fmt.Errorf("spooling response: %w", err)
	}
	if err := ex.Request.Err(); err != nil {
		return nil, fmt.Errorf("spooling request: %w", err)
	}
	alg, b32 := s.opts.Digest, s.opts.Base32
	resLen := ex.ResEnd - ex.ResStart
	resDigest, err := ex.Response.DigestRange(alg, b32, ex.ResStart, resLen)
	if err != nil {
		return nil, fmt.Errorf("digesting response: %w", err)
	}
	resID := newRecordID()
	// Through a SOCKS or parent route the origin's address is unknown:
	// the field is left out rather than naming the route.
	var fetchFields []writer.Field
	if ex.IP != "" {
		fetchFields = []writer.Field{{Name: "WARC-IP-Address", Value: ex.IP}}
	}
	fetchFields = s.appendProtocolFields(fetchFields, ex)
	resFields := append([]writer.Field(nil), fetchFields...)
	if ex.payloadDigest != "" {
		resFields = append(resFields, writer.Field{Name: "WARC-Payload-Digest", Value: ex.payloadDigest})
	}
	if ex.Truncated != "" {
		resFields = append(resFields, writer.Field{Name: "WARC-Truncated", Value: ex.Truncated})
	}
	c := &writer.Capture{
		Prefix: ex.Prefix,
		Records: []writer.Record{
			{
				Type: "response", ID: resID, Date: ex.Start, TargetURI: ex.TargetURI,
				ContentType: "application/http; msgtype=response",
				Fields:      resFields,
				Block:       ex.Response.Buffer(), BlockOffset: ex.ResStart, BlockLength: resLen,
				BlockDigest: resDigest,
			},
			{
				Type: "request", Date: ex.Start, TargetURI: ex.TargetURI,
				ContentType: "application/http; msgtype=request",
				Fields:      append([]writer.Field{{Name: "WARC-Concurrent-To", Value: resID}}, fetchFields...),
				Block:       ex.Request.Buffer(), BlockLength: ex.Request.Len(),
				BlockDigest: ex.Request.Digest(alg, b32),
			},
		},
	}
	if original != nil {
		if err := s.toRevisit(ex, &c.Records[0], original); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// toRevisit turns a response record into a revisit of original: the block
// keeps the response's status line and headers only.
func (s *Stage) toRevisit(ex *Exchange, r *writer.Record, original *dedup.Entry) error {
	headLen := ex.HeadEnd - ex.ResStart
	if headLen <= 0 || headLen > r.BlockLength {
		return fmt.Errorf("revisit: response head of %d bytes out of range", headLen)
	}
	d, err := ex.Response.DigestRange(s.opts.Digest, s.opts.Base32, ex.ResStart, headLen)
	if err != nil {
		return fmt.Errorf("digesting response head: %w", err)
	}
	r.Type = "revisit"
	r.BlockLength = headLen
	r.BlockDigest = d
	r.Fields = append(r.Fields, writer.Field{Name: "WARC-Profile", Value: s.revisitProfile()})
	// An original found through a CDX server has no record ID.
	if original.ID != "" {
		r.Fields = append(r.Fields, writer.Field{Name: "WARC-Refers-To", Value: original.ID})
	}
	r.Fields = append(r.Fields,
		writer.Field{Name: "WARC-Refers-To-Target-URI", Value: original.URL},
		writer.Field{Name: "WARC-Refers-To-Date", Value: original.Date},
	)
	return nil
}

// appendProtocolFields appends to f how the exchange was fetched
// upstream: a WARC-Protocol field per protocol, HTTP's first (the
// upstream leg is always HTTP/1.1), then TLS's, and the cipher suite
// (iipc/warc-specifications #42 and #86), unless --warc-protocol=false.
func (s *Stage) appendProtocolFields(f []writer.Field, ex *Exchange) []writer.Field {
	if !s.opts.WARCProtocol {
		return f
	}
	f = append(f, writer.Field{Name: "WARC-Protocol", Value: "http/1.1"})
	if ex.TLSVersion != "" {
		f = append(f, writer.Field{Name: "WARC-Protocol", Value: ex.TLSVersion})
	}
	if ex.CipherSuite != "" {
		f = append(f, writer.Field{Name: "WARC-Cipher-Suite", Value: ex.CipherSuite})
	}
	return f
}

func newRecordID() string {
	return "<urn:uuid:" + uuid.NewString() + ">"
}

// warcDate formats t as the writer writes WARC-Date.
func (s *Stage) warcDate(t time.Time) string {
	if s.opts.WARCVersion == "1.1" {
		return t.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// revisitProfile is WARC-Profile of revisit records for the WARC version.
func (s *Stage) revisitProfile() string {
	if s.opts.WARCVersion == "1.1" {
		return "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	}
	return "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
}
