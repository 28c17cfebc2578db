package wacz_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warcproxy/warcproxy/wacz"
)

// BenchmarkPack packs one .warc.gz and reports, beside the time per byte
// of input, the peak heap and the peak RSS while packing: both must stay
// flat whatever the input's size (the bound: a 2 GB input under
// 100 MB of RSS).
//
// The input is generated with the proxy's writer: HTML captures of 16 KiB
// bodies adding up to WACZ_BENCH_SIZE (default 64MB; units KB MB GB, or
// KiB MiB GiB; the .warc.gz comes out at about 65% of it), or the WARC
// file at WACZ_BENCH_WARC is packed as it is. The 2 GB run (a minute to
// generate the input, 40 s to pack it; docs/performance.md):
//
//	WACZ_BENCH_SIZE=3.3GB nice go test -run '^$' -bench BenchmarkPack -benchtime 1x -timeout 30m ./wacz/
func BenchmarkPack(b *testing.B) {
	warc := os.Getenv("WACZ_BENCH_WARC")
	if warc == "" {
		size := int64(64 << 20)
		if s := os.Getenv("WACZ_BENCH_SIZE"); s != "" {
			var err error
			if size, err = parseSize(s); err != nil {
				b.Fatalf("WACZ_BENCH_SIZE: %v", err)
			}
		}
		const bodySize = 16 << 10
		warc = generateWARC(b, b.TempDir(), true, int(size/bodySize), bodySize)
	}
	st, err := os.Stat(warc)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "bench.wacz")

	// What generating the input left behind is not the packer's.
	runtime.GC()
	debug.FreeOSMemory()
	rssReset := resetPeakRSS()
	heap := watchHeap()
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wacz.Pack(context.Background(), []string{warc}, wacz.Options{Output: out, Force: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(heap())/1e6, "peak-heap-MB")
	if rss, ok := peakRSS(); ok && rssReset {
		b.ReportMetric(float64(rss)/1e6, "peak-rss-MB")
	}
	b.ReportMetric(float64(st.Size())/1e6, "input-MB")
}

// watchHeap samples the bytes of live and unswept heap objects every
// millisecond until the returned function is called, which returns the
// largest sample.
func watchHeap() func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// resetPeakRSS resets the process's peak RSS (VmHWM), on Linux.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS is the process's peak RSS since it started or was reset, on
// Linux.
func peakRSS() (int64, bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// parseSize reads "64MB", "2GB", "512MiB" or a number of bytes.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(n, 64)
			return int64(f * float64(u.mult)), err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
