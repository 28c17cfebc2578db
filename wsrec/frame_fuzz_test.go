package wsrec

import (
	"testing"
	"time"
)

// FuzzFrameReader: whatever bytes pass, the reader neither panics nor
// loops, and the log it writes is JSON lines (memOut panics otherwise).
func FuzzFrameReader(f *testing.F) {
	f.Add(frame(true, false, opText, testKey, []byte("hello")), true, 3)
	f.Add(frame(false, true, opText, nil, []byte{0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00}), true, 1)
	f.Add(append(frame(true, false, opClose, nil, []byte{3, 0xe8, 'x'}), frame(true, false, opPing, nil, nil)...), false, 7)
	f.Add([]byte{0x81, 0x7f, 0, 0, 0, 0, 0, 0, 0, 5, 'a', 'b'}, false, 2)
	f.Fuzz(func(t *testing.T, p []byte, deflate bool, piece int) {
		var ext []string
		if deflate {
			ext = []string{"permessage-deflate"}
		}
		out := &memOut{}
		s, err := New(Options{Extensions: ext, Opened: time.Now(), Out: out, MaxRecordSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		feed(s, Send, p, max(1, piece%64))
		feed(s, Recv, p, max(1, piece%13))
		s.End()
		if len(out.records) == 0 {
			t.Fatal("no record")
		}
	})
}
