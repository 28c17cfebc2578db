package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/testutil/proxytest"
)

// BenchmarkProxy measures whole-proxy throughput on loopback: origin,
// proxy and load in one process, keep-alive clients (50; 10 for 4 MB),
// incompressible bodies. Compare with direct (no proxy) and prefix=- (proxy
// work without recording) to see where the time goes; h2 is workers=2 with
// the client speaking HTTP/2 in the proxy's tunnels (tls=true only).
func BenchmarkProxy(b *testing.B) {
	body16k := make([]byte, 16<<10)
	_, _ = rand.Read(body16k)
	body256k := make([]byte, 256<<10)
	_, _ = rand.Read(body256k)
	body4m := make([]byte, 4<<20)
	_, _ = rand.Read(body4m)
	// Every response is a different payload (a counter in its first
	// bytes), so that dedup (on by default) misses and saves each time:
	// the worst case for its cost.
	var seq atomic.Uint64
	handler := func(body []byte) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			var head [8]byte
			binary.BigEndian.PutUint64(head[:], seq.Add(1))
			_, _ = w.Write(head[:])
			_, _ = w.Write(body[len(head):])
		})
	}
	for _, size := range []struct {
		name        string
		body        []byte
		concurrency int
	}{{"16KB", body16k, 50}, {"256KB", body256k, 50}, {"4MB", body4m, 10}} {
		for _, tlsOn := range []bool{false, true} {
			for _, mode := range benchModes {
				if mode == "h2" && !tlsOn {
					continue // no h2c
				}
				name := fmt.Sprintf("body=%s/tls=%v/%s", size.name, tlsOn, mode)
				b.Run(name, func(b *testing.B) {
					origin := httptest.NewUnstartedServer(handler(size.body))
					origin.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes cut by Close
					if tlsOn {
						origin.StartTLS()
					} else {
						origin.Start()
					}
					defer origin.Close()
					var client *http.Client
					if mode == "direct" {
						client = origin.Client()
						client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
					} else {
						p := proxytest.Start(b, func(c *config.Config) {
							switch mode {
							case "prefix=-":
								c.Prefix = "-"
							case "workers=1":
								c.WriterWorkers = 1
							case "workers=2":
								c.WriterWorkers = 2
							case "nogzip":
								c.Compression = "none"
							case "workers=4":
								c.WriterWorkers = 4
							case "nodb":
								c.DedupDB, c.StatsDB = "none", "none"
							}
						})
						client = p.Client()
						if mode == "h2" {
							client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
						}
					}
					runLoad(b, client, origin.URL, size.concurrency, int64(len(size.body)))
				})
			}
		}
	}
}

func runLoad(b *testing.B, client *http.Client, base string, concurrency int, size int64) {
	b.ReportAllocs()
	b.SetBytes(size)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	b.ResetTimer()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				resp, err := client.Get(fmt.Sprintf("%s/u/%d", base, i))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "urls/s")
}

// Modes: direct (no proxy), prefix=- (proxy work without recording),
// workers=N (recording with N writer workers and embedded dedup and stats,
// as by default), nodb (recording without dedup and stats), h2 (workers=2,
// the client speaking HTTP/2 to the proxy).
var benchModes = []string{"direct", "prefix=-", "workers=1", "workers=2", "workers=4", "nodb", "h2"}

// BenchmarkProxyHugeStream streams one 1 GiB chunked response through the
// proxy per iteration (the origin writes it in chunks of 4 KiB or 1 MiB,
// each flushed) and reports MB/s up to the moment its records are written
// (the drain included) and the drain alone, in seconds. Run it with
// -benchtime 1x: one iteration moves 1 GiB.
func BenchmarkProxyHugeStream(b *testing.B) {
	origin := httptest.NewServer(bench.NewOrigin())
	defer origin.Close()
	for _, chunk := range []struct {
		name  string
		size  int
		count int
	}{{"4KiB", 4 << 10, 1 << 18}, {"1MiB", 1 << 20, 1 << 10}} {
		b.Run("chunk="+chunk.name, func(b *testing.B) {
			p := proxytest.Start(b, nil)
			client := p.Client()
			url := fmt.Sprintf("%s/stream/%d/%d", origin.URL, chunk.size, chunk.count)
			b.SetBytes(int64(chunk.size) * int64(chunk.count))
			var drain time.Duration
			for b.Loop() {
				resp, err := client.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				streamed := time.Now()
				p.Settle()
				drain += time.Since(streamed)
			}
			b.ReportMetric(drain.Seconds()/float64(b.N), "drain-s/op")
		})
	}
}

// BenchmarkSlowloris reports a normal client's latency (p50, p99, in ms)
// while 0 or 1,000 other connections trickle their headers a byte every
// 100 ms (--header-timeout 30 s, so they stay for the whole run).
func BenchmarkSlowloris(b *testing.B) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "normal")
	}))
	defer origin.Close()
	for _, slow := range []int{0, 1000} {
		b.Run(fmt.Sprintf("slow=%d", slow), func(b *testing.B) {
			p := proxytest.Start(b, func(c *config.Config) {
				c.MaxConns = 1100
				c.DedupDB, c.StatsDB = "none", "none"
			})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range slow {
				c, err := net.Dial("tcp", p.URL.Host)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					head := "GET " + origin.URL + "/slow HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Pad: aaaaaaaa\r\n", 1000)
					for i := range len(head) {
						if _, err := c.Write([]byte{head[i]}); err != nil {
							return
						}
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
					}
				}()
			}
			client := p.Client()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				resp, err := client.Get(fmt.Sprintf("%s/n%d", origin.URL, i))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
