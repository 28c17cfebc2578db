package wacz_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/warcscan"
	"github.com/warcproxy/warcproxy/writer"
)

// generateWARC writes, with the proxy's own writer, one WARC file into dir
// holding n captures (response and request) of HTML pages, each body about
// bodySize bytes, and returns its path.
func generateWARC(tb testing.TB, dir string, gzip bool, n, bodySize int) string {
	tb.Helper()
	p, err := writer.New(writer.Options{Dir: dir, Compression: codecOf(gzip), GzipLevel: 1, Hostname: "gen", Workers: 1,
		RolloverSize: 1 << 50}, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyz \n    "
	date := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	var body strings.Builder
	for i := range n {
		body.Reset()
		fmt.Fprintf(&body, "<html><head><title>Page %d</title></head><body>", i)
		// Random letters and spaces: about as compressible as text.
		for body.Len() < bodySize {
			x := r.Uint64()
			for range 12 {
				body.WriteByte(letters[x&31])
				x >>= 5
			}
		}
		uri := fmt.Sprintf("http://www.example%d.com/path/%d?b=%d&a=%d", i%50, i, i, r.IntN(100))
		resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", body.Len(), body.String())
		req := fmt.Sprintf("GET /path/%d HTTP/1.1\r\nHost: www.example%d.com\r\n\r\n", i, i%50)
		err := p.Enqueue(context.Background(), &writer.Capture{Records: []writer.Record{
			{Type: "response", TargetURI: uri, Date: date.Add(time.Duration(i) * time.Second), ContentType: "application/http; msgtype=response",
				Fields: []writer.Field{{Name: "WARC-Payload-Digest", Value: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
				Block:  strings.NewReader(resp), BlockLength: int64(len(resp))},
			{Type: "request", TargetURI: uri, Date: date, ContentType: "application/http; msgtype=request",
				Block: strings.NewReader(req), BlockLength: int64(len(req))},
		}})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		tb.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.warc*"))
	if err != nil || len(paths) != 1 {
		tb.Fatalf("want one WARC file in %s: %v %v", dir, paths, err)
	}
	return paths[0]
}

// codecOf is the writer's compression for a generated WARC.
func codecOf(gzip bool) warcscan.Codec {
	if gzip {
		return warcscan.Gzip
	}
	return warcscan.None
}
