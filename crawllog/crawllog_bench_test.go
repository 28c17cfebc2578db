package crawllog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

var benchEntry = Entry{
	Status: 200, ContentLength: 5123, URL: "https://www.example.com/assets/css/site.css?v=20170803",
	Referer: "https://www.example.com/", MIMEType: "text/css", FetchStart: fetchStart,
	FetchDuration: 123 * time.Millisecond, PayloadDigest: digestA, ContentSize: 5555,
	WARCFilename: warcName, WARCOffset: 123456789,
}

func BenchmarkFormat(b *testing.B) {
	meta := benchEntry
	meta.Metadata = json.RawMessage(`{"seed":"https://www.example.com/","hop_path":"L","brozzled_url":"https://www.example.com/page","hop_via_url":"https://www.example.com/"}`)
	for _, bc := range []struct {
		name string
		e    Entry
	}{{"metadata=false", benchEntry}, {"metadata=true", meta}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := appendLine(nil, &bc.e, logged)
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				buf = appendLine(buf[:0], &bc.e, logged)
			}
		})
	}
}

// BenchmarkLog measures whole Log calls, one write(2) each, into 1 file or
// spread over 200 prefixes (so the 64-file LRU reopens files), from one
// goroutine or GOMAXPROCS.
func BenchmarkLog(b *testing.B) {
	for _, prefixes := range []int{1, 200} {
		names := make([]string, prefixes)
		for i := range names {
			names[i] = fmt.Sprintf("p%d", i)
		}
		line := len(appendLine(nil, &benchEntry, logged))
		b.Run(fmt.Sprintf("prefixes=%d/goroutines=1", prefixes), func(b *testing.B) {
			l := benchLogger(b)
			b.ReportAllocs()
			b.SetBytes(int64(line))
			i := 0
			for b.Loop() {
				e := benchEntry
				e.Prefix = names[i%prefixes]
				i++
				if err := l.Log(e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("prefixes=%d/goroutines=parallel", prefixes), func(b *testing.B) {
			l := benchLogger(b)
			b.ReportAllocs()
			b.SetBytes(int64(line))
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					e := benchEntry
					e.Prefix = names[i%prefixes]
					i += 7
					if err := l.Log(e); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func benchLogger(b *testing.B) *Logger {
	b.Helper()
	l, err := New(b.TempDir(), "bench", 8000, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}
