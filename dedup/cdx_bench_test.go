package dedup_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/testutil/cdxserver"
)

// BenchmarkCDXLookup: lookups per second against a CDX server on loopback
// (internal/testutil/cdxserver with 1000 captures), by lookups in flight,
// with the answer cache off (every lookup is a request; half hit, half
// miss) and on (every lookup after the first of each URL is cached).
func BenchmarkCDXLookup(b *testing.B) {
	const urls = 1000
	var caps []cdxserver.Capture
	digests := make([]string, urls)
	for i := range urls {
		body := fmt.Sprintf("body %d", i)
		digests[i] = "sha1:" + b32(sha1Of(body))
		if i%2 == 1 {
			digests[i] = "sha1:" + b32(sha1Of("changed "+body)) // a miss
		}
		caps = append(caps, cdxserver.Capture{
			"urlkey": fmt.Sprintf("com,example)/%d", i), "timestamp": "20240102030405",
			"url": fmt.Sprintf("http://example.com/%d", i), "mime": "text/html", "digest": b32(sha1Of(body)),
		})
	}
	srv := cdxserver.New(b, caps)
	for _, cache := range []bool{false, true} {
		for _, conc := range []int{1, 8, 50} {
			b.Run(fmt.Sprintf("cache=%t/inflight=%d", cache, conc), func(b *testing.B) {
				c, err := dedup.NewCDX(dedup.CDXOptions{
					URL: srv.URL, MaxConcurrent: conc, Timeout: 10 * time.Second,
					CacheSize: map[bool]int{false: -1, true: urls}[cache],
				}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				ctx := context.Background()
				var next atomic.Int64
				lookup := func() {
					i := int(next.Add(1)) % urls
					if _, err := c.Lookup(ctx, digests[i], fmt.Sprintf("http://example.com/%d", i)); err != nil {
						b.Error(err)
					}
				}
				b.ReportAllocs()
				start := time.Now()
				if conc == 1 {
					for b.Loop() {
						lookup()
					}
				} else {
					b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							lookup()
						}
					})
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lookups/s")
			})
		}
	}
}
