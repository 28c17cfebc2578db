package bench

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is a ResponseWriter that throws the body away, so the
// benchmark measures the origin's handler alone.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}

func BenchmarkOrigin(b *testing.B) {
	o := NewOrigin()
	for _, c := range []struct {
		name string
		path string
		size int64
	}{
		{"bytes=16KB", "/bytes/16KB", 16 << 10},
		{"bytes=4MB", "/bytes/4MB", 4 << 20},
		{"bytes=16KB/gzip=true/text=true", "/bytes/16KB?gzip=1&text=1", 16 << 10},
		{"stream=4KBx16", "/stream/4KB/16", 64 << 10},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", c.path, nil)
			w := &discardWriter{h: http.Header{}}
			b.SetBytes(c.size)
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				o.ServeHTTP(w, req)
			}
		})
	}
}
