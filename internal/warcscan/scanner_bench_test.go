package warcscan

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkScanner reports scanning speed in bytes of file per second, for
// a file of 1000 records with 16 KiB text-like blocks, each block read
// (as the CDXJ indexer reads some) or skipped (as crash recovery does).
func BenchmarkScanner(b *testing.B) {
	block := strings.Repeat("<p>the archive of web pages</p>\n", 16<<10/32)
	for _, c := range []Codec{Gzip, None} {
		var recs [][]byte
		for i := range 1000 {
			recs = append(recs, warcRecord("response", fmt.Sprintf("WARC-Target-URI: http://example.com/%d\r\n", i), block))
		}
		data := makeFile(b, c, recs...).data
		for _, read := range []bool{true, false} {
			b.Run(fmt.Sprintf("codec=%s/read=%v", c.Name(), read), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					s := New(bytes.NewReader(data), Options{Codec: c, SkipHeaders: !read})
					for {
						rec, err := s.Next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						if read {
							if _, err := io.Copy(io.Discard, rec.Block); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
			})
		}
	}
}
