package wsrec

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

type wantLine struct {
	typ, payload string
	opcode       float64
	mask         bool
}

// TestFrameReaderMessages feeds one socket the frames of both directions,
// in pieces of every size, and checks the lines of its log.
func TestFrameReaderMessages(t *testing.T) {
	long := strings.Repeat("long text é ", 7000) // 16-bit and 64-bit lengths, spans reads
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	tests := []struct {
		name  string
		ext   []string
		send  [][]byte // client to server frames
		recv  [][]byte
		want  []wantLine // send lines, then recv lines
		trunc string
	}{
		{
			name: "text and binary, masked from the client",
			send: [][]byte{frame(true, false, opText, testKey, []byte("hello")), frame(true, false, opBinary, testKey, bin)},
			recv: [][]byte{frame(true, false, opText, nil, []byte(`"quoted"\n`))},
			want: []wantLine{
				{"send", "hello", 1, true}, {"send", base64.StdEncoding.EncodeToString(bin), 2, true},
				{"recv", `"quoted"\n`, 1, false},
			},
			trunc: TruncDisconnect,
		},
		{
			name: "fragmented with a ping between the fragments",
			send: [][]byte{
				frame(false, false, opText, testKey, []byte("frag")),
				frame(true, false, opPing, testKey, []byte("p")),
				frame(false, false, opContinuation, testKey, []byte("men")),
				frame(true, false, opContinuation, testKey, []byte("ted")),
			},
			want:  []wantLine{{"send", "cA==", 9, true}, {"send", "fragmented", 1, true}},
			trunc: TruncDisconnect,
		},
		{
			name: "long message and a close each way",
			send: [][]byte{frame(true, false, opText, testKey, []byte(long)), frame(true, false, opClose, testKey, []byte{0x03, 0xe8, 'b', 'y', 'e'})},
			recv: [][]byte{frame(true, false, opBinary, nil, bytes.Repeat(bin, 20000)), frame(true, false, opClose, nil, []byte{0x03, 0xe8})},
			want: []wantLine{
				{"send", long, 1, true}, {"send", base64.StdEncoding.EncodeToString([]byte{0x03, 0xe8, 'b', 'y', 'e'}), 8, true},
				{"recv", base64.StdEncoding.EncodeToString(bytes.Repeat(bin, 20000)), 2, false},
				{"recv", "A+g=", 8, false},
			},
		},
		{
			name:  "invalid UTF-8 in a text message becomes U+FFFD",
			recv:  [][]byte{frame(true, false, opText, nil, []byte("a\xffb"))},
			want:  []wantLine{{"recv", "a\ufffdb", 1, false}},
			trunc: TruncDisconnect,
		},
	}
	for _, tt := range tests {
		for _, piece := range []int{1, 3, 4096, 1 << 20} {
			t.Run(tt.name, func(t *testing.T) {
				out := &memOut{}
				s := newTestSocket(t, out, tt.ext...)
				feed(s, Send, bytes.Join(tt.send, nil), piece)
				feed(s, Recv, bytes.Join(tt.recv, nil), piece)
				s.End()
				if len(out.records) != 1 {
					t.Fatalf("%d records, want 1", len(out.records))
				}
				r := out.records[0]
				if r.Truncated != tt.trunc {
					t.Errorf("WARC-Truncated %q, want %q", r.Truncated, tt.trunc)
				}
				checkLines(t, r.lines, tt.want)
			})
		}
	}
}

// feed writes p to one direction in pieces of n bytes.
func feed(s *Socket, d Direction, p []byte, n int) {
	for len(p) > 0 {
		k := min(n, len(p))
		s.Observe(d, p[:k])
		p = p[k:]
	}
}

func checkLines(t *testing.T, got []map[string]any, want []wantLine) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g["type"] != w.typ || g["opcode"] != w.opcode || g["mask"] != w.mask || g["payloadData"] != w.payload {
			pd, _ := g["payloadData"].(string)
			t.Errorf("line %d: type %v opcode %v mask %v payload %.40q; want %s %v %v %.40q",
				i, g["type"], g["opcode"], g["mask"], pd, w.typ, w.opcode, w.mask, w.payload)
		}
		if _, ok := g["ts"].(float64); !ok {
			t.Errorf("line %d: ts %v is not a number", i, g["ts"])
		}
	}
}

func TestCloseLineHasCodeAndReason(t *testing.T) {
	out := &memOut{}
	s := newTestSocket(t, out)
	s.Observe(Recv, frame(true, false, opClose, nil, []byte{0x0f, 0xa0, 'g', 'o', 'n', 'e'}))
	s.Observe(Send, frame(true, false, opClose, testKey, []byte{0x0f, 0xa0}))
	s.End()
	l := out.records[0].lines
	if l[0]["closeCode"] != 4000.0 || l[0]["closeReason"] != "gone" {
		t.Errorf("close line %v: want closeCode 4000 and closeReason gone", l[0])
	}
	if out.records[0].Truncated != "" {
		t.Errorf("a close each way is a complete socket, got WARC-Truncated %q", out.records[0].Truncated)
	}
}

// TestPermessageDeflate: compressed messages are inflated for the log,
// with and without context takeover, fragmented or not.
func TestPermessageDeflate(t *testing.T) {
	msgs := []string{"the first message, the first message", "the first message again", strings.Repeat("z", 100000)}
	for _, tt := range []struct {
		name     string
		ext      string
		takeover bool
	}{
		{"context takeover", "permessage-deflate; client_max_window_bits=15", true},
		{"no context takeover", "permessage-deflate; client_no_context_takeover; server_no_context_takeover", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := &memOut{}
			s := newTestSocket(t, out, tt.ext)
			csend, crecv := &compressor{takeover: tt.takeover}, &compressor{takeover: tt.takeover}
			var want []wantLine
			for _, m := range msgs {
				p := csend.compress(t, []byte(m))
				half := len(p) / 2
				s.Observe(Send, frame(false, true, opText, testKey, p[:half]))
				s.Observe(Send, frame(true, false, opContinuation, testKey, p[half:]))
				s.Observe(Recv, frame(true, true, opBinary, nil, crecv.compress(t, []byte(m))))
				want = append(want, wantLine{"send", m, 1, true}, wantLine{"recv", base64.StdEncoding.EncodeToString([]byte(m)), 2, false})
			}
			s.Observe(Send, frame(true, false, opText, testKey, []byte("not compressed")))
			want = append(want, wantLine{"send", "not compressed", 1, true})
			s.End()
			checkLines(t, out.records[0].lines, want)
		})
	}
}

// TestUnreadableFramesEndTheRecording: what is not RFC 6455 framing ends
// the recording with the record so far, marked unspecified.
func TestUnreadableFramesEndTheRecording(t *testing.T) {
	good := frame(true, false, opText, testKey, []byte("kept"))
	tests := []struct {
		name string
		ext  string
		bad  []byte
	}{
		{"RSV2 set", "", []byte{0xa1, 0x80, 1, 2, 3, 4}},
		{"reserved opcode", "", frame(true, false, 0x3, testKey, nil)},
		{"RSV1 without permessage-deflate", "", frame(true, true, opText, testKey, []byte("x"))},
		{"continuation without a message", "", frame(true, false, opContinuation, testKey, []byte("x"))},
		{"fragmented ping", "", frame(false, false, opPing, testKey, nil)},
		{"control frame over 125 bytes", "", frame(true, false, opPing, testKey, make([]byte, 126))},
		{"64-bit length with the top bit", "", []byte{0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"compressed bytes that do not inflate", "permessage-deflate", frame(true, true, opText, testKey, []byte{0xff, 0xff, 0xff})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &memOut{}
			s := newTestSocket(t, out, tt.ext)
			s.Observe(Send, good)
			s.Observe(Send, tt.bad)
			s.Observe(Send, good) // read no more
			s.Observe(Recv, frame(true, false, opText, nil, []byte("not read either")))
			s.End()
			if len(out.records) != 1 || out.records[0].Truncated != TruncUnspecified {
				t.Fatalf("records %+v, want one marked unspecified", out.records)
			}
			checkLines(t, out.records[0].lines, []wantLine{{"send", "kept", 1, true}})
		})
	}
}

func TestExtensionsNegotiated(t *testing.T) {
	for _, tt := range []struct {
		ext string
		ok  bool
	}{
		{"", true},
		{"permessage-deflate", true},
		{"permessage-deflate; server_max_window_bits=10; client_max_window_bits", true},
		{`permessage-deflate; client_max_window_bits="12"`, true},
		{"permessage-deflate; server_max_window_bits=16", false},
		{"permessage-deflate; bogus", false},
		{"x-webkit-deflate-frame", false},
		{"permessage-deflate, permessage-deflate", false},
	} {
		t.Run(tt.ext, func(t *testing.T) {
			_, err := New(Options{Extensions: []string{tt.ext}, Out: &memOut{}})
			if (err == nil) != tt.ok {
				t.Errorf("New with %q: err %v, want ok %v", tt.ext, err, tt.ok)
			}
		})
	}
}
