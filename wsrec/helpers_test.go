package wsrec

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"sync"
	"testing"
	"time"
)

// memLog is a Log in memory.
type memLog struct {
	bytes.Buffer
	closed bool
}

func (l *memLog) Len() int64 { return int64(l.Buffer.Len()) }
func (l *memLog) Close()     { l.closed = true }

// memOut collects the records a Socket flushes.
type memOut struct {
	mu      sync.Mutex
	records []flushed
}

type flushed struct {
	Cut
	lines []map[string]any
	raw   string
}

func (o *memOut) NewLog() Log { return &memLog{} }

func (o *memOut) Flush(l Log, c Cut) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ml := l.(*memLog)
	f := flushed{Cut: c, raw: ml.String()}
	dec := json.NewDecoder(bytes.NewReader(ml.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			panic("a line that is not JSON: " + err.Error() + " in " + ml.String())
		}
		f.lines = append(f.lines, m)
	}
	o.records = append(o.records, f)
}

// frame builds one frame; a non-nil key masks it.
func frame(fin, rsv1 bool, op byte, key []byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	if rsv1 {
		b0 |= 0x40
	}
	out := []byte{b0}
	var maskBit byte
	if key != nil {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		out = append(out, maskBit|byte(n))
	case n < 1<<16:
		out = append(out, maskBit|126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, maskBit|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if key == nil {
		return append(out, payload...)
	}
	out = append(out, key...)
	for i, c := range payload {
		out = append(out, c^key[i%4])
	}
	return out
}

var testKey = []byte{0x37, 0xfa, 0x21, 0x3d}

// compressor makes permessage-deflate payloads; with takeover its context
// runs on from message to message.
type compressor struct {
	buf      bytes.Buffer
	w        *flate.Writer
	takeover bool
}

func (c *compressor) compress(t *testing.T, p []byte) []byte {
	t.Helper()
	if c.w == nil || !c.takeover {
		c.buf.Reset()
		c.w, _ = flate.NewWriter(&c.buf, flate.BestCompression)
	}
	c.buf.Reset()
	if _, err := c.w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := c.w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(c.buf.Bytes())
	if !bytes.HasSuffix(out, []byte{0, 0, 0xff, 0xff}) {
		t.Fatalf("sync flush without its tail: % x", out)
	}
	return out[:len(out)-4]
}

func newTestSocket(t *testing.T, out *memOut, ext ...string) *Socket {
	t.Helper()
	s, err := New(Options{Extensions: ext, Opened: time.Now(), Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
