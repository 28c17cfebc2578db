package wire

import (
	"bytes"
	"hash"
	"io"
	"strconv"
	"strings"

	"github.com/warcproxy/warcproxy/internal/bufpool"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
)

// Recorder receives the bytes of one direction of an exchange: it spools
// them and hashes them as they pass, so the block digest is ready when the
// exchange ends. Its Write never fails (the connection must not notice a
// full spool disk); Err tells whether the copy is whole.
type Recorder struct {
	buf *spool.Buffer
	alg digest.Algorithm
	h   digest.Async
	err error
}

// NewRecorder spools into a new buffer of s, hashing with alg (off this
// goroutine once the recording is large and one of lanes is free:
// digest.Async).
func NewRecorder(s *spool.Spooler, alg digest.Algorithm, lanes *digest.Lanes) *Recorder {
	r := &Recorder{buf: s.NewBuffer(), alg: alg}
	r.h.Init(alg.New(), lanes)
	return r
}

func (r *Recorder) Write(p []byte) (int, error) {
	if r.err == nil {
		if _, err := r.buf.Write(p); err != nil {
			r.err = err
		}
	}
	_, _ = r.h.Write(p) // never fails
	return len(p), nil
}

// Err is the first error spooling met; the recording is incomplete then.
func (r *Recorder) Err() error { return r.err }

// Buffer is the spool holding the recorded bytes.
func (r *Recorder) Buffer() *spool.Buffer { return r.buf }

// Len is the number of bytes recorded.
func (r *Recorder) Len() int64 { return r.buf.Len() }

// Digest formats the digest of everything recorded.
func (r *Recorder) Digest(alg digest.Algorithm, b32 bool) string {
	return alg.Format(r.h.Sum(nil), b32)
}

// Close releases the spool and the hash (its lane, if it hashed off this
// goroutine); a nil Recorder is fine.
func (r *Recorder) Close() {
	if r != nil {
		r.buf.Close()
		r.h.Release()
	}
}

// DigestRange hashes [off, off+n) of the spool; used when the block is not
// the whole recording (interim 1xx responses before it, bytes after it).
func (r *Recorder) DigestRange(alg digest.Algorithm, b32 bool, off, n int64) (string, error) {
	if off == 0 && n == r.buf.Len() {
		return r.Digest(alg, b32), nil
	}
	h := alg.New()
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r.buf, off, n), *buf); err != nil {
		return "", err
	}
	return alg.Format(h.Sum(nil), b32), nil
}

// HasTransferEncoding reports whether the recorded response head in
// [start, end) has a Transfer-Encoding header (net/http drops it from
// HTTP/1.0 responses before the proxy sees them).
func (r *Recorder) HasTransferEncoding(start, end int64) bool {
	if end-start <= 0 || end-start > maxResponseHeadBytes {
		return false
	}
	head := make([]byte, end-start)
	if _, err := r.buf.ReadAt(head, start); err != nil && err != io.EOF {
		return false
	}
	return bytes.Contains(bytes.ToLower(head), []byte("\ntransfer-encoding:"))
}

// RecutChunked finds where to end a response record whose chunked body
// broke off with bad framing: after the last whole chunk from headEnd
// (the end of the response head) to end. It returns that offset and the
// payload hash (the recorder's algorithm) over the data of the chunks kept. Readers de-chunk a
// record, and bytes that are not chunked framing would make the whole
// record unreadable to them.
func (r *Recorder) RecutChunked(headEnd, end int64) (int64, hash.Hash) {
	h := r.alg.New()
	cut, pos := headEnd, headEnd
	src := io.NewSectionReader(r.buf, 0, end)
	for pos < end {
		next, ok := wholeChunk(src, pos, end, h)
		if !ok {
			break
		}
		pos, cut = next, next
	}
	return cut, h
}

// wholeChunk hashes the data of the chunk at pos into h and returns where
// the next chunk starts; false when there is no whole data chunk there
// (the last chunk, a bad size line, or a chunk cut short).
func wholeChunk(r *io.SectionReader, pos, end int64, h hash.Hash) (int64, bool) {
	line, ok := readLineAt(r, pos, end)
	if !ok {
		return 0, false
	}
	sizeField, _, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeField), 16, 64)
	if err != nil || size <= 0 {
		return 0, false
	}
	dataStart := pos + int64(len(line))
	dataEnd := dataStart + size
	if dataEnd+2 > end {
		return 0, false
	}
	var crlf [2]byte
	if _, err := r.ReadAt(crlf[:], dataEnd); err != nil || string(crlf[:]) != "\r\n" {
		return 0, false
	}
	if _, err := io.Copy(h, io.NewSectionReader(r, dataStart, size)); err != nil {
		return 0, false
	}
	return dataEnd + 2, true
}

// readLineAt reads one line (through "\n", at most 4 KiB) starting at off.
func readLineAt(r io.ReaderAt, off, limit int64) (string, bool) {
	var buf [4096]byte
	n, _ := r.ReadAt(buf[:min(int64(len(buf)), limit-off)], off)
	if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
		return string(buf[:i+1]), true
	}
	return "", false
}

// Payload hashes the transfer-decoded body as the client is sent it: the
// WARC-Payload-Digest.
type Payload struct {
	R io.Reader
	H hash.Hash // nil when not hashed
	N int64     // bytes read so far
}

// Release lets go of H's resources (a digest.Async's lane) once its sum is
// taken or will not be: H itself stays usable.
func (p *Payload) Release() {
	if r, ok := p.H.(interface{ Release() }); ok {
		r.Release()
	}
}

func (p *Payload) Read(b []byte) (int, error) {
	n, err := p.R.Read(b)
	if n > 0 {
		p.N += int64(n)
		if p.H != nil {
			p.H.Write(b[:n])
		}
	}
	return n, err
}
