package wsrec

import (
	"strings"
	"testing"
	"time"
)

// TestRecordCuts: a log is cut into records by size and by time, each
// marked with why, and the last one by how the socket ended.
func TestRecordCuts(t *testing.T) {
	msg := frame(true, false, opText, nil, []byte(strings.Repeat("m", 100)))
	t.Run("size", func(t *testing.T) {
		out := &memOut{}
		s, err := New(Options{Opened: time.Now(), Out: out, MaxRecordSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			s.Observe(Recv, msg)
		}
		s.End()
		if len(out.records) < 3 {
			t.Fatalf("%d records, want several", len(out.records))
		}
		total := 0
		for i, r := range out.records {
			want := TruncLength
			if i == len(out.records)-1 {
				want = TruncDisconnect
			}
			if r.Truncated != want {
				t.Errorf("record %d: WARC-Truncated %q, want %q", i, r.Truncated, want)
			}
			if len(r.raw) > 1000 {
				t.Errorf("record %d: %d bytes, over the 1000 allowed", i, len(r.raw))
			}
			total += len(r.lines)
		}
		if total != 20 {
			t.Errorf("%d lines in all, want 20", total)
		}
	})
	t.Run("time", func(t *testing.T) {
		out := &memOut{}
		s, err := New(Options{Opened: time.Now(), Out: out, MaxRecordTime: 30 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s.Observe(Recv, msg)
		time.Sleep(80 * time.Millisecond) // the timer cuts a quiet socket
		s.Observe(Recv, msg)
		s.Observe(Recv, frame(true, false, opClose, nil, []byte{3, 0xe8}))
		s.Observe(Send, frame(true, false, opClose, testKey, []byte{3, 0xe8}))
		s.End()
		if len(out.records) != 2 {
			t.Fatalf("%d records, want 2", len(out.records))
		}
		if out.records[0].Truncated != TruncTime || out.records[1].Truncated != "" {
			t.Errorf("WARC-Truncated %q then %q, want time then none", out.records[0].Truncated, out.records[1].Truncated)
		}
		if !out.records[1].Start.After(out.records[0].Start) {
			t.Errorf("the second record starts at %v, not after the first's %v", out.records[1].Start, out.records[0].Start)
		}
	})
	t.Run("a socket without messages still gets its record", func(t *testing.T) {
		out := &memOut{}
		s := newTestSocket(t, out)
		s.End()
		if len(out.records) != 1 || out.records[0].Messages != 0 || out.records[0].Truncated != TruncDisconnect {
			t.Errorf("records %+v, want one empty, marked disconnect", out.records)
		}
	})
}
