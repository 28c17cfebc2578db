package cdxj

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzIndexFile feeds arbitrary files, plain and gzip-compressed, to the
// indexer: it may fail but must not panic, and what it writes is sorted
// lines.
func FuzzIndexFile(f *testing.F) {
	rec := "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.com/?b&a\r\nWARC-Date: 2024-01-02T03:04:05Z\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: 44\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhi\r\n\r\n"
	req := "WARC/1.0\r\nWARC-Type: request\r\nWARC-Target-URI: http://example.com/?b&a\r\nContent-Type: application/http; msgtype=request\r\nContent-Length: 74\r\n\r\nPOST / HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}\r\n\r\n"
	f.Add([]byte(rec), false)
	f.Add([]byte(rec+req), true)
	f.Add([]byte("WARC/1.0\r\nContent-Length: 5\r\n\r\nabc"), false)
	f.Add([]byte("HTTP/1.1 204\r\n\r\n"), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		path := filepath.Join(dir, "fuzz.warc")
		if gz {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(data)
			_ = zw.Close()
			data = b.Bytes()
			path += ".gz"
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := IndexFile(path, &out); err != nil {
			return
		}
		lines := bytes.SplitAfter(out.Bytes(), []byte("\n"))
		for i := 1; i < len(lines)-1; i++ {
			if bytes.Compare(lines[i-1], lines[i]) > 0 {
				t.Fatalf("lines out of order: %q > %q", lines[i-1], lines[i])
			}
		}
	})
}

// FuzzSURT checks that SURT never panics and that a urlkey of an http(s)
// URL has no spaces (a CDXJ line is split at its first two spaces).
func FuzzSURT(f *testing.F) {
	for _, s := range []string{"http://www.example.com:80/a?b=1&a=2#x", "https://[::1]/", "http://0x7f.1/", "http://ex%41mple.com./", "dns:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := SURT(s)
		if (strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:")) && !strings.ContainsAny(s, " \t\n") && strings.Contains(k, " ") {
			t.Fatalf("SURT(%q) = %q has a space", s, k)
		}
	})
}
