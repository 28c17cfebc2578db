package proxy

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// readFiltered reads all of in through a hostFilterReader, one byte per
// read from the source when oneByte is set (so that every line start is
// split), with small reads on the consumer side.
func readFiltered(t testing.TB, in string, oneByte bool) string {
	t.Helper()
	var src io.Reader = strings.NewReader(in)
	if oneByte {
		src = iotest.OneByteReader(src)
	}
	var r hostFilterReader
	var out bytes.Buffer
	p := make([]byte, 7)
	for {
		n, err := r.read(src, p)
		out.Write(p[:n])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

// brozzlerWriteRecord is what Brozzler's urllib sends for a screenshot
// (brozzler/worker.py _warcprox_write_record), byte for byte.
const brozzlerWriteRecord = "WARCPROX_WRITE_RECORD screenshot:https://example.com/ HTTP/1.1\r\n" +
	"Accept-Encoding: identity\r\nContent-Length: 7\r\nUser-Agent: Python-urllib/3.11\r\n" +
	"Content-Type: image/jpeg\r\nWarc-Type: resource\r\nHost: N/A\r\n" +
	"Warcprox-Meta: {\"warc-prefix\":\"job\"}\r\nConnection: close\r\n\r\nPNGDATA"

func TestHostFilter(t *testing.T) {
	get := "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n"
	trap := "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nHost: N/A\r\n\r\n"
	post := "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: " +
		strconv.Itoa(len(trap)) + "\r\n\r\n" + trap
	fixed := strings.Replace(brozzlerWriteRecord, "Host: N/A\r\n", "Host: \r\n", 1)
	for _, tc := range []struct{ name, in, want string }{
		{"brozzler write record", brozzlerWriteRecord, fixed},
		{"PUTMETA, lower-case name, bare LF", "PUTMETA x:y HTTP/1.1\nhost:  N/A \nContent-Length: 0\n\n",
			"PUTMETA x:y HTTP/1.1\nHost: \nContent-Length: 0\n\n"},
		{"valid host kept", strings.Replace(brozzlerWriteRecord, "N/A", "example.com", 1),
			strings.Replace(brozzlerWriteRecord, "N/A", "example.com", 1)},
		{"not a write record", strings.Replace(brozzlerWriteRecord, "WARCPROX_WRITE_RECORD", "GET", 1),
			strings.Replace(brozzlerWriteRecord, "WARCPROX_WRITE_RECORD", "GET", 1)},
		{"after a keep-alive GET", get + brozzlerWriteRecord, get + fixed},
		{"after a Content-Length body", post + brozzlerWriteRecord, post + fixed},
		{"a body that looks like a head is left alone", post, post},
		{"long header name and long header value", "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nX-" +
			strings.Repeat("n", 100) + ": " + strings.Repeat("v", 20000) + "\r\nHost: N/A\r\n\r\n",
			"WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nX-" + strings.Repeat("n", 100) + ": " +
				strings.Repeat("v", 20000) + "\r\nHost: \r\n\r\n"},
		{"chunked: the rest of the connection untouched",
			"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + brozzlerWriteRecord,
			"POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + brozzlerWriteRecord},
		{"expect: untouched afterwards",
			"POST http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n" + brozzlerWriteRecord,
			"POST http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n" + brozzlerWriteRecord},
		{"CONNECT: the tunnel's bytes untouched",
			"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n" + brozzlerWriteRecord,
			"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n" + brozzlerWriteRecord},
		{"folded line", "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nA: b\r\n c\r\nHost: N/A\r\n\r\n",
			"WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nA: b\r\n c\r\nHost: N/A\r\n\r\n"},
		{"truncated head", "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nHo", "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nHo"},
		{"no Host: an empty one added", "WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi" + get,
			"WARCPROX_WRITE_RECORD x:y HTTP/1.1\r\nContent-Length: 2\r\nHost: \r\n\r\nhi" + get},
		{"no Host, bare LF", "PUTMETA x:y HTTP/1.0\n\n", "PUTMETA x:y HTTP/1.0\nHost: \n\n"},
		{"no Host in a GET: untouched", "GET http://a.example/ HTTP/1.0\r\n\r\n", "GET http://a.example/ HTTP/1.0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				if got := readFiltered(t, tc.in, oneByte); got != tc.want {
					t.Errorf("oneByte=%v:\n got %q\nwant %q", oneByte, got, tc.want)
				}
			}
		})
	}
}

// FuzzHostFilter: the filter never panics, lengthens the stream only by
// the empty Host lines it adds to write-record heads, passes through
// unchanged any stream without a write-record method, and does not depend
// on how reads split the bytes.
func FuzzHostFilter(f *testing.F) {
	f.Add(brozzlerWriteRecord)
	f.Add("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiPUTMETA x HTTP/1.1\r\nHost: /\r\n\r\n")
	f.Add("PUTMETA x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
	f.Fuzz(func(t *testing.T, in string) {
		whole := readFiltered(t, in, false)
		if bytewise := readFiltered(t, in, true); bytewise != whole {
			t.Fatalf("depends on read sizes: %q vs %q", whole, bytewise)
		}
		added := strings.Count(whole, "Host: \n") + strings.Count(whole, "Host: \r\n") -
			strings.Count(in, "Host: \n") - strings.Count(in, "Host: \r\n")
		if len(whole) > len(in)+max(added, 0)*len("Host: \r\n") {
			t.Fatalf("output longer than input: %q -> %q", in, whole)
		}
		if !strings.Contains(in, methodWriteRecord) && !strings.Contains(in, methodPutMeta) && whole != in {
			t.Fatalf("changed a stream without write records: %q -> %q", in, whole)
		}
	})
}
