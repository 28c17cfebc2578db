package writer

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// BenchmarkPool measures the pool end to end, with gzip or zstd at their
// default levels: one op is one capture
// (a response with the body plus a small request) enqueued by one producer. SetBytes counts the capture's block bytes, so MB/s
// is uncompressed input. captures/s and MB/s are also reported over the
// whole run including the drain at Close, since the queue holds a tail
// that ns/op does not see.
func BenchmarkPool(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"2KB", 2 << 10}, {"16KB", 16 << 10}, {"1MB", 1 << 20}} {
		for _, compressible := range []bool{false, true} {
			for _, workers := range []int{1, 2, 4} {
				for _, c := range []warcscan.Codec{warcscan.Gzip, warcscan.Zstd} {
					name := fmt.Sprintf("body=%s/compressible=%v/workers=%d/compression=%s", size.name, compressible, workers, c.Name())
					b.Run(name, func(b *testing.B) {
						benchPool(b, size.n, compressible, workers, c)
					})
				}
			}
		}
	}
}

func benchPool(b *testing.B, size int, compressible bool, workers int, c warcscan.Codec) {
	p, err := New(Options{
		Dir:         b.TempDir(),
		Compression: c,
		Workers:     workers,
		QueueSize:   8 * workers,
		Hostname:    "bench.example.org",
		Base32:      true,
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	bd := body(size, compressible, 1)
	resp := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(bd))
	resp = append(resp, bd...)
	req := []byte("GET /some/page.html HTTP/1.1\r\nHost: example.org\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	respDigest, reqDigest, payloadDigest := sha1b32(resp), sha1b32(req), sha1b32(bd)
	respBlock, reqBlock := bytes.NewReader(resp), bytes.NewReader(req)
	date := time.Now()

	var wg sync.WaitGroup
	done := func(err error) {
		if err != nil {
			b.Error(err)
		}
		wg.Done()
	}
	newCapture := func() *Capture {
		// As the proxy does: it names the response, so that the request
		// can point at it; the pool names the request.
		id, err := newRecordID()
		if err != nil {
			b.Fatal(err)
		}
		return &Capture{
			Records: []Record{{
				Type: "response", ID: id, Date: date, TargetURI: "http://example.org/some/page.html",
				ContentType: "application/http; msgtype=response",
				Fields:      []Field{{"WARC-IP-Address", "192.0.2.7"}, {"WARC-Payload-Digest", payloadDigest}},
				Block:       respBlock, BlockLength: int64(len(resp)), BlockDigest: respDigest,
			}, {
				Type: "request", Date: date, TargetURI: "http://example.org/some/page.html",
				ContentType: "application/http; msgtype=request",
				Fields:      []Field{{"WARC-Concurrent-To", id}},
				Block:       reqBlock, BlockLength: int64(len(req)), BlockDigest: reqDigest,
			}},
			Done: done,
		}
	}

	b.SetBytes(int64(len(resp) + len(req)))
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		wg.Add(1)
		if err := p.Enqueue(context.Background(), newCapture()); err != nil {
			b.Fatal(err)
		}
		n++
	}
	wg.Wait()
	if err := p.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(n)/elapsed, "captures/s")
	b.ReportMetric(float64(n)*float64(len(resp)+len(req))/elapsed/1e6, "MB/s(incl.close)")
	s := p.Stats()
	b.ReportMetric(float64(s.BytesWritten)/float64(n), "disk-B/capture")
}

// BenchmarkWriteRecord measures one worker's record encoding alone, into a
// buffer that is never flushed: the floor under the pool's numbers.
func BenchmarkWriteRecord(b *testing.B) {
	for _, c := range []warcscan.Codec{warcscan.None, warcscan.Gzip, warcscan.Zstd} {
		b.Run(fmt.Sprintf("body=2KB/compression=%s", c.Name()), func(b *testing.B) {
			p := &Pool{
				opts: Options{Compression: c, GzipLevel: -1, ZstdLevel: DefaultZstdLevel, WARCVersion: "1.0", Digest: "sha1", Base32: true},
				log:  slog.New(slog.DiscardHandler),
			}
			w := newWorker(p, 0)
			wf := &warcFile{out: newOutput(discardFile{}, make([]byte, bufSize)), warcinfoID: "<urn:uuid:0>"}
			bd := body(2<<10, false, 1)
			r := Record{
				Type: "response", ID: "<urn:uuid:1>", Date: time.Now(), TargetURI: "http://example.org/",
				ContentType: "application/http; msgtype=response", Block: bytes.NewReader(bd),
				BlockLength: int64(len(bd)), BlockDigest: sha1b32(bd),
			}
			b.SetBytes(int64(len(bd)))
			b.ReportAllocs()
			for b.Loop() {
				if err := w.writeRecord(wf, &r); err != nil {
					b.Fatal(err)
				}
				wf.out.buf = wf.out.buf[:0]
			}
		})
	}
}

// discardFile is a File that drops what is written.
type discardFile struct{}

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardFile) Truncate(int64) error                   { return nil }
func (discardFile) Sync() error                            { return nil }
func (discardFile) Close() error                           { return nil }
