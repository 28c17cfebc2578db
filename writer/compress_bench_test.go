package writer

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// BenchmarkRecordCompression measures one worker writing one response
// record at the default gzip or zstd level into a file that drops what it
// gets: the compression of one record, with nothing else in the way. MB/s
// is block bytes in; disk-B/op and ratio are what reaches the file. Bodies
// are random bytes or warcbench's text (?text=1, about 4:1). Blocks larger
// than the tile repeat it, 16 MB apart: further than deflate's window and
// zstd's 8 MiB one, so they compress as unique bytes would without holding
// 256 MB in memory. Run the 256MB case with -benchtime 1x.
func BenchmarkRecordCompression(b *testing.B) {
	tiles := map[string][]byte{}
	for _, body := range []string{"random", "text"} {
		for _, size := range []struct {
			name string
			n    int64
		}{{"16KB", 16 << 10}, {"256KB", 256 << 10}, {"4MB", 4 << 20}, {"256MB", 256 << 20}} {
			for _, c := range []warcscan.Codec{warcscan.Gzip, warcscan.Zstd} {
				b.Run(fmt.Sprintf("body=%s/size=%s/compression=%s", body, size.name, c.Name()), func(b *testing.B) {
					if tiles[body] == nil {
						tiles[body] = benchTile(body, 16<<20)
					}
					benchRecordCompression(b, tiles[body], size.n, c)
				})
			}
		}
	}
}

// benchTile is a response block of about n bytes: a head, then the body.
func benchTile(body string, n int) []byte {
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
	if body == "text" {
		return append(head, bench.Text(n-len(head))...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for len(head) < n {
		head = append(head, byte(r.Uint32()))
	}
	return head
}

func benchRecordCompression(b *testing.B, tile []byte, n int64, c warcscan.Codec) {
	p := &Pool{
		opts: Options{Compression: c, GzipLevel: -1, ZstdLevel: DefaultZstdLevel, WARCVersion: "1.0", Digest: "sha1", Base32: true},
		log:  slog.New(slog.DiscardHandler),
	}
	w := newWorker(p, 0)
	wf := &warcFile{out: newOutput(discardFile{}, make([]byte, bufSize)), warcinfoID: "<urn:uuid:0>"}
	r := Record{
		Type: "response", ID: "<urn:uuid:1>", Date: time.Now(), TargetURI: "http://example.org/",
		ContentType: "application/http; msgtype=response", Block: tiled(tile),
		BlockLength: n, BlockDigest: "sha1:AAAA",
	}
	b.SetBytes(n)
	b.ReportAllocs()
	var out int64
	ops := 0
	for b.Loop() {
		start := wf.out.Size()
		if err := w.writeRecord(wf, &r); err != nil {
			b.Fatal(err)
		}
		out += wf.out.Size() - start
		ops++
	}
	b.ReportMetric(float64(out)/float64(ops), "disk-B/op")
	b.ReportMetric(float64(out)/float64(ops)/float64(n), "ratio")
}

// tiled is a block that repeats its tile.
type tiled []byte

func (t tiled) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], t[(off+int64(n))%int64(len(t)):])
	}
	return n, nil
}
