package warccheck

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"

	"github.com/nlnwa/gowarc/v3"
)

// gowarcOptions make gowarc's reader as strict as it goes while letting this
// package see every finding of a record rather than only the first:
//   - WithStrictValidation: syntax errors (bad line endings, bytes between
//     records, a bad version line), unknown record types and missing block
//     parsing all fail; blocks are parsed, so payload digests are computed.
//   - WithSpecViolationPolicy(ErrWarn): spec violations, content-length
//     mismatches and wrong block and payload digests (sha1/sha256/sha512/md5,
//     base32 or hex, detected from the value's length) come back as a list
//     instead of stopping at the first. Every entry is reported as a
//     failure, so this is no more lenient than ErrFail, and it lets a
//     chunked message's payload digest be re-checked here (gowarc hashes the
//     chunk framing too).
//   - WithBlockErrorPolicy(ErrFail): an HTTP header or warc-fields block
//     that does not parse fails (the default ignores it).
//
// Fixing options (WithFix*, WithAddMissing*) stay off, so nothing is repaired
// on the way.
func gowarcOptions() []gowarc.WarcRecordOption {
	return []gowarc.WarcRecordOption{
		gowarc.WithStrictValidation(),
		gowarc.WithSpecViolationPolicy(gowarc.ErrWarn),
		gowarc.WithBlockErrorPolicy(gowarc.ErrFail),
	}
}

// unmarshalers holds every gowarc Unmarshaler this package uses, made when
// the package initialises. Making one later is a data race: each gowarc
// options constructor writes uuid's package-level poolEnabled
// (uuid.EnableRandPool), which every uuid.New reads, so a reader made while
// a writer under test generates record ids, or two made by parallel tests,
// trip the race detector. An Unmarshaler keeps per-record state, so each is
// used by one file at a time; more concurrent files than this wait.
var unmarshalers = func() chan gowarc.Unmarshaler {
	const n = 16
	c := make(chan gowarc.Unmarshaler, n)
	for range n {
		c <- gowarc.NewUnmarshaler(gowarcOptions()...)
	}
	return c
}()

// maxHeaderPeek bounds the WARC header this package reads for
// Record.Header; it is also the size of the buffered readers.
const maxHeaderPeek = 1 << 20

// checkGowarc reads each file with gowarc and returns the records of each,
// by path. Problems are reported to r. With allowOpen false a name ending
// in .open is a problem too (the file is still read).
func checkGowarc(r *reporter, paths []string, allowOpen bool) map[string][]Record {
	out, _ := checkGowarcFiles(r, paths, allowOpen, nil)
	return out
}

// checkGowarcFiles is checkGowarc that also tells which files had problems.
// zst holds the .warc.zst files among paths, decompressed (nil for one
// that could not be).
func checkGowarcFiles(r *reporter, paths []string, allowOpen bool, zst map[string]*zstdFile) (recs map[string][]Record, failed map[string]bool) {
	r.t.Helper()
	out := make(map[string][]Record, len(paths))
	failed = make(map[string]bool)
	for _, p := range paths {
		fr := &fileReader{path: p, name: filepath.Base(p)}
		if !allowOpen && strings.HasSuffix(p, ".open") {
			fr.problemf("file is still open (name ends in .open): it was not closed and renamed")
		}
		func() {
			fr.u = <-unmarshalers
			defer func() { unmarshalers <- fr.u }()
			if !isZstdName(p) {
				fr.read()
			} else if z := zst[p]; z != nil {
				fr.readZstd(z)
			} else {
				fr.problemf("not read: the zstd layout or the zstd command failed (reported above)")
			}
		}()
		for _, msg := range fr.problems {
			r.errorf("%s", msg)
		}
		out[p] = fr.records
		failed[p] = len(fr.problems) > 0
	}
	return out, failed
}

// fileReader reads one file.
type fileReader struct {
	path, name string
	u          gowarc.Unmarshaler
	records    []Record
	problems   []string
}

func (fr *fileReader) problemf(format string, args ...any) {
	fr.problems = append(fr.problems, fr.path+": "+fmt.Sprintf(format, args...))
}

// countingReader counts the bytes read from a file, to compute offsets.
//
// This reader walks files and gzip members on its own, with the standard
// library's gzip, rather than with internal/warcscan (klauspost's gzip),
// which crash recovery and the CDXJ indexer read with: a check that shared
// their member and offset code could not catch its mistakes.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func isGzipMagic(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

func (fr *fileReader) read() {
	f, err := os.Open(fr.path)
	if err != nil {
		fr.problemf("%v", err)
		return
	}
	defer f.Close()
	cr := &countingReader{r: f}
	br := bufio.NewReaderSize(cr, maxHeaderPeek)
	magic, _ := br.Peek(2)
	gz := isGzipMagic(magic)
	if wantGz := strings.HasSuffix(strings.TrimSuffix(fr.path, ".open"), ".gz"); gz != wantGz {
		if wantGz {
			fr.problemf("name ends in .gz but the file is not gzip")
		} else {
			fr.problemf("name does not end in .gz but the file is gzip")
		}
	}
	if gz {
		fr.readGzip(br, cr)
	} else {
		fr.readPlain(br, cr)
	}
	fr.checkFirst()
}

// checkFirst reports a file without records, or whose first record is
// not warcinfo.
func (fr *fileReader) checkFirst() {
	switch {
	case len(fr.records) == 0 && len(fr.problems) == 0:
		fr.problemf("no records")
	case len(fr.records) > 0 && fr.records[0].Type != "warcinfo":
		fr.problemf("first record is %q, want warcinfo", fr.records[0].Type)
	}
}

// readPlain reads an uncompressed file record by record. It stops at the
// first record it cannot parse: where the next one starts is unknown.
func (fr *fileReader) readPlain(br *bufio.Reader, cr *countingReader) {
	for {
		off := cr.n - int64(br.Buffered())
		b, err := br.Peek(2)
		if len(b) == 0 && errors.Is(err, io.EOF) {
			return
		}
		if err != nil && !errors.Is(err, io.EOF) {
			fr.problemf("offset %d: %v", off, err)
			return
		}
		if isGzipMagic(b) {
			fr.problemf("offset %d: gzip data in an uncompressed WARC", off)
			return
		}
		if !fr.readRecord(br, off) {
			return
		}
	}
}

// readGzip reads a gzip file member by member; each member must hold exactly
// one record. A record that fails to parse only costs its member.
func (fr *fileReader) readGzip(br *bufio.Reader, cr *countingReader) {
	var zr *gzip.Reader
	mb := bufio.NewReaderSize(nil, maxHeaderPeek)
	for {
		off := cr.n - int64(br.Buffered())
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return
		}
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(br)
		} else {
			err = zr.Reset(br)
		}
		if err != nil {
			fr.problemf("offset %d: not a gzip member: %v", off, err)
			return
		}
		zr.Multistream(false)
		mb.Reset(zr)
		n, parsed := 0, 0 // records tried and read in this member
		for {
			if _, err := mb.Peek(1); err != nil {
				if !errors.Is(err, io.EOF) {
					fr.problemf("gzip member at offset %d: %v", off, err)
					return
				}
				break
			}
			n++
			if !fr.readRecord(mb, off) {
				break
			}
			parsed++
		}
		switch {
		case n == 0:
			fr.problemf("gzip member at offset %d is empty", off)
		case n > 1 && parsed == n:
			fr.problemf("gzip member at offset %d holds %d records: every record must be its own gzip member", off, n)
		case n > 1:
			fr.problemf("gzip member at offset %d has bytes after its first record: every record must be its own gzip member", off)
		}
		// Read the member to its end, which checks its CRC and length.
		if _, err := io.Copy(io.Discard, mb); err != nil {
			fr.problemf("gzip member at offset %d: %v", off, err)
			return
		}
	}
}

// readRecord reads one record from b, which holds the record at offset off
// in the file. It reports false if the record did not parse, in which case
// the position of b is unknown.
func (fr *fileReader) readRecord(b *bufio.Reader, off int64) bool {
	fields := peekHeader(b)
	rec, skipped, validation, err := fr.u.Unmarshal(b)
	if rec != nil {
		defer rec.Close()
	}
	where := fmt.Sprintf("record at offset %d", off)
	if rec != nil {
		where = fmt.Sprintf("record at offset %d (%s %s)", off, rec.WarcHeader().Get(gowarc.WarcType), rec.WarcHeader().Get(gowarc.WarcRecordID))
	}
	if skipped != 0 {
		fr.problemf("%s: %d bytes before the record", where, skipped)
	}
	if err != nil {
		fr.problemf("%s: %v", where, err)
		return false
	}

	h := rec.WarcHeader()
	out := Record{
		File:      fr.name,
		Offset:    off,
		Type:      h.Get(gowarc.WarcType),
		ID:        h.Get(gowarc.WarcRecordID),
		TargetURI: h.Get(gowarc.WarcTargetURI),
		Header:    fields,
	}
	if d, err := rec.Date(); err == nil {
		out.Date = d
	}

	chunked := false
	if hb, ok := rec.Block().(gowarc.ProtocolHeaderBlock); ok {
		chunked = isChunked(hb.ProtocolHeaderBytes())
	}
	checkPayload := chunked && h.Has(gowarc.WarcPayloadDigest) && !h.Has(gowarc.WarcSegmentNumber) &&
		(rec.Type() == gowarc.Response || rec.Type() == gowarc.Request || rec.Type() == gowarc.Resource)
	for _, v := range validation {
		var de *gowarc.DigestError
		if checkPayload && errors.As(v, &de) && strings.HasPrefix(v.Error(), "payload: ") {
			continue // gowarc hashed the chunk framing; checked below instead
		}
		fr.problemf("%s: %v", where, v)
	}

	raw, err := rec.Block().RawBytes()
	if err != nil {
		fr.problemf("%s: reading block: %v", where, err)
		return true
	}
	sum := sha1.New()
	keep := &capWriter{max: maxKeptBlock}
	n, err := io.Copy(io.MultiWriter(sum, keep), raw)
	if err != nil {
		fr.problemf("%s: reading block: %v", where, err)
		return true
	}
	out.BlockLen = n
	out.BlockSHA1 = hex.EncodeToString(sum.Sum(nil))
	if !keep.over {
		out.Block = keep.buf.Bytes()
		if out.Block == nil {
			out.Block = []byte{}
		}
	}

	if checkPayload {
		if msg := checkChunkedPayload(rec); msg != "" {
			fr.problemf("%s: %s", where, msg)
		}
	}
	fr.records = append(fr.records, out)
	return true
}

// checkChunkedPayload checks the payload digest of a chunked HTTP message
// against its de-chunked body; it returns a problem or "".
func checkChunkedPayload(rec gowarc.WarcRecord) string {
	pb, ok := rec.Block().(gowarc.PayloadBlock)
	if !ok {
		return fmt.Sprintf("unexpected block type %T", rec.Block())
	}
	want := rec.WarcHeader().Get(gowarc.WarcPayloadDigest)
	h, err := newDigestHash(want)
	if err != nil {
		return "WARC-Payload-Digest: " + err.Error()
	}
	body, err := pb.PayloadBytes()
	if err != nil {
		return "reading payload: " + err.Error()
	}
	br := bufio.NewReader(body)
	if _, err := br.Peek(1); err == nil { // an empty body (HEAD, 304) has no chunks
		_, err = io.Copy(h, httputil.NewChunkedReader(br))
		cutShort := errors.Is(err, io.ErrUnexpectedEOF) && rec.WarcHeader().Has(gowarc.WarcTruncated)
		if err != nil && !cutShort {
			return "de-chunking the HTTP body: " + err.Error()
		}
	}
	if msg := h.verify(want); msg != "" {
		return "WARC-Payload-Digest (over the de-chunked body) " + msg
	}
	return ""
}

// capWriter keeps what is written to it up to max bytes.
type capWriter struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if !w.over {
		if w.buf.Len()+len(p) > w.max {
			w.over = true
			w.buf = bytes.Buffer{}
		} else {
			w.buf.Write(p)
		}
	}
	return len(p), nil
}

// peekHeader returns the WARC header fields at the start of b without
// consuming them, keyed by name as written; the last of repeated fields
// wins. It returns what it could parse: gowarc reports a bad header.
func peekHeader(b *bufio.Reader) map[string]string {
	var head []byte
	for n := 4096; ; n *= 2 {
		if n > maxHeaderPeek {
			n = maxHeaderPeek
		}
		p, err := b.Peek(n)
		if i := bytes.Index(p, []byte("\r\n\r\n")); i >= 0 {
			head = p[:i+2]
			break
		}
		if err != nil || n == maxHeaderPeek {
			head = p
			break
		}
	}
	fields := make(map[string]string)
	lines := strings.Split(string(head), "\n")
	last := ""
	for _, line := range lines[1:] { // lines[0] is the version line
		line = strings.TrimRight(line, "\r")
		if line == "" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && last != "" {
			fields[last] += " " + strings.TrimSpace(line)
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		last = strings.TrimSpace(name)
		fields[last] = strings.TrimSpace(value)
	}
	return fields
}

// isChunked reports whether an HTTP header's Transfer-Encoding ends in
// chunked. net/http moves Transfer-Encoding out of the parsed header, so
// the raw bytes are read.
func isChunked(header []byte) bool {
	var codings []string
	lines := strings.Split(string(header), "\n")
	for _, line := range lines[1:] {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Transfer-Encoding") {
			continue
		}
		for c := range strings.SplitSeq(value, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" {
				codings = append(codings, c)
			}
		}
	}
	return len(codings) > 0 && codings[len(codings)-1] == "chunked"
}

// digestHash is a running hash for a WARC digest value.
type digestHash struct {
	hash.Hash
	alg string
}

// newDigestHash returns a hash for the algorithm of a WARC digest value
// ("sha1:BASE32", "sha256:hex", ...).
func newDigestHash(value string) (*digestHash, error) {
	alg, _, ok := strings.Cut(value, ":")
	if !ok {
		return nil, fmt.Errorf("%q has no algorithm prefix", value)
	}
	alg = strings.ToLower(strings.TrimSpace(alg))
	switch alg {
	case "sha1", "sha-1":
		return &digestHash{sha1.New(), "sha1"}, nil
	case "sha256", "sha-256":
		return &digestHash{sha256.New(), "sha256"}, nil
	case "sha512", "sha-512":
		return &digestHash{sha512.New(), "sha512"}, nil
	case "md5":
		return &digestHash{md5.New(), "md5"}, nil
	}
	return nil, fmt.Errorf("unsupported digest algorithm %q", alg)
}

// verify compares the sum with a digest value in hex or base32 (padded or
// not, any case); it returns a problem or "".
func (d *digestHash) verify(value string) string {
	_, enc, _ := strings.Cut(value, ":")
	enc = strings.TrimSpace(enc)
	sum := d.Sum(nil)
	b32 := base32.StdEncoding.WithPadding(base32.NoPadding)
	var want []byte
	var err error
	computed := d.alg + ":" + base32.StdEncoding.EncodeToString(sum)
	switch {
	case len(enc) == 2*len(sum):
		want, err = hex.DecodeString(enc)
		computed = d.alg + ":" + hex.EncodeToString(sum)
	case len(strings.TrimRight(enc, "=")) == b32.EncodedLen(len(sum)):
		want, err = b32.DecodeString(strings.ToUpper(strings.TrimRight(enc, "=")))
	default:
		return fmt.Sprintf("%q is neither hex nor base32 of a %s sum", value, d.alg)
	}
	if err != nil {
		return fmt.Sprintf("%q: %v", value, err)
	}
	if !bytes.Equal(want, sum) {
		return fmt.Sprintf("mismatch: header %s, computed %s", value, computed)
	}
	return ""
}
