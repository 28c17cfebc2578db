package cdxj

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// benchWARC writes a WARC of n captures (response and request) with
// text-like bodies of size bytes and returns its path and size.
func benchWARC(b *testing.B, gz bool, n, size int) (string, int64) {
	b.Helper()
	dir := b.TempDir()
	c := warcscan.None
	if gz {
		c = warcscan.Gzip
	}
	p, err := writer.New(writer.Options{Dir: dir, Compression: c, GzipLevel: 1, Hostname: "bench", Workers: 1}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"the", "archive", "of", "web", "pages", "<div>", "</p>", "record", "proxy", "\n"}
	for i := range n {
		var body strings.Builder
		for body.Len() < size {
			body.WriteString(words[r.IntN(len(words))])
			body.WriteByte(' ')
		}
		uri := fmt.Sprintf("http://www.example%d.com/path/%d?b=%d&a=%d", i%50, i, i, r.IntN(100))
		resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", body.Len(), body.String())
		req := fmt.Sprintf("GET /path/%d HTTP/1.1\r\nHost: www.example.com\r\n\r\n", i)
		err := p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{
			{Type: "response", TargetURI: uri, Date: time.Now(), ContentType: "application/http; msgtype=response",
				Fields: []writer.Field{{Name: "WARC-Payload-Digest", Value: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
				Block:  strings.NewReader(resp), BlockLength: int64(len(resp))},
			{Type: "request", TargetURI: uri, ContentType: "application/http; msgtype=request",
				Block: strings.NewReader(req), BlockLength: int64(len(req))},
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		b.Fatalf("want one WARC file in %s: %v %v", dir, ents, err)
	}
	path := dir + "/" + ents[0].Name()
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// BenchmarkIndexFile reports indexing speed in bytes of WARC file per
// second (MB/s of the file as stored, compressed or not).
func BenchmarkIndexFile(b *testing.B) {
	for _, gz := range []bool{true, false} {
		for _, size := range []int{4 << 10, 256 << 10} {
			b.Run(fmt.Sprintf("gzip=%v/body=%dKiB", gz, size>>10), func(b *testing.B) {
				path, n := benchWARC(b, gz, (64<<20)/size, size)
				b.SetBytes(n)
				b.ReportAllocs()
				for b.Loop() {
					if err := IndexFile(path, io.Discard); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
