package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// SoakSample is one look at the proxy.
type SoakSample struct {
	T          time.Duration // since the load started
	RSSMB      float64       // VmRSS, 2^20 bytes
	FDs        float64       // entries of /proc/PID/fd
	Goroutines float64       // go_goroutines
	Queue      float64       // warcproxy_writer_queue_length
	HeapMB     float64       // go_memstats_heap_inuse_bytes, 2^20 (not judged: shows whether RSS is Go heap)
	URLsPerSec float64       // exchanges finished per second since the last sample
	// BacklogMB is warcproxy_upload_backlog_bytes, 2^20: closed files
	// waiting to be shipped (NaN without --upload-to).
	BacklogMB float64
}

// countFDs counts the open file descriptors of pid.
func countFDs(pid int) (int, bool) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err == nil
}

// scrapeGauges reads the named unlabelled samples from a Prometheus text
// exposition at url.
func scrapeGauges(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping metrics: %w", err)
	}
	defer resp.Body.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(val)[0], 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// sampleProxy takes one sample of pid and its metrics; fields it cannot
// read are NaN.
func sampleProxy(ctx context.Context, pid int, metricsURL string) SoakSample {
	s := SoakSample{RSSMB: math.NaN(), FDs: math.NaN(), Goroutines: math.NaN(), Queue: math.NaN(), HeapMB: math.NaN(), BacklogMB: math.NaN()}
	if rss, ok := readVmRSS(pid); ok {
		s.RSSMB = float64(rss) / (1 << 20)
	}
	if n, ok := countFDs(pid); ok {
		s.FDs = float64(n)
	}
	if g, err := scrapeGauges(ctx, metricsURL, "go_goroutines", "warcproxy_writer_queue_length", "go_memstats_heap_inuse_bytes",
		"warcproxy_upload_backlog_bytes"); err == nil {
		if v, ok := g["warcproxy_upload_backlog_bytes"]; ok {
			s.BacklogMB = v / (1 << 20)
		}
		if v, ok := g["go_memstats_heap_inuse_bytes"]; ok {
			s.HeapMB = v / (1 << 20)
		}
		if v, ok := g["go_goroutines"]; ok {
			s.Goroutines = v
		}
		if v, ok := g["warcproxy_writer_queue_length"]; ok {
			s.Queue = v
		}
	}
	return s
}

// Slope is the least-squares slope of ys over xs, or NaN with fewer than
// two distinct xs. NaN ys are left out.
func Slope(xs, ys []float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for i := range xs {
		if math.IsNaN(ys[i]) {
			continue
		}
		n++
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if n < 2 || d <= 1e-12*math.Max(1, sxx*n) {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / d
}

// minTrendSpan is the shortest last half whose trend is judged.
const minTrendSpan = time.Minute

// Trend is a series' fitted slope over the last half of a run.
type Trend struct {
	Name      string
	PerMinute float64 // least-squares slope
	Mean      float64 // over the last half
	Rise      float64 // PerMinute times the half's length in minutes
	Limit     float64 // |Rise| at most this is flat
	Flat      bool
	Judged    bool // false when the half is too short to tell (then Flat)
}

// Trends fits RSS, fds and goroutines over the samples of the last half
// of the run. A series is flat when the fitted line rises over that half
// by no more than max(10% of its mean, floor): 16 MiB of RSS,
// max(20, 8×concurrency) fds, max(40, 8×concurrency) goroutines (an
// exchange holds a few fds and goroutines, and idle keep-alive connections
// come and go, so the floors are some exchanges' worth of noise). Only a
// rise counts (a leak grows); a fall is reported but flat. A half shorter
// than minTrendSpan, or with fewer than three samples, is not judged (a
// slope over seconds is noise, not a leak): Judged false, Flat true.
func Trends(samples []SoakSample, concurrency int) []Trend {
	if len(samples) == 0 {
		return nil
	}
	end := samples[len(samples)-1].T
	half := end / 2
	series := []struct {
		name  string
		get   func(SoakSample) float64
		floor float64
	}{
		{"rss_mb", func(s SoakSample) float64 { return s.RSSMB }, 16},
		{"fds", func(s SoakSample) float64 { return s.FDs }, math.Max(20, 8*float64(concurrency))},
		{"goroutines", func(s SoakSample) float64 { return s.Goroutines }, math.Max(40, 8*float64(concurrency))},
	}
	var out []Trend
	for _, se := range series {
		var xs, ys []float64
		var sum float64
		for _, s := range samples {
			if s.T < half || math.IsNaN(se.get(s)) {
				continue
			}
			xs = append(xs, s.T.Minutes())
			ys = append(ys, se.get(s))
			sum += se.get(s)
		}
		t := Trend{Name: se.name, PerMinute: Slope(xs, ys)}
		if len(xs) > 0 {
			t.Mean = sum / float64(len(xs))
			t.Rise = t.PerMinute * (xs[len(xs)-1] - xs[0])
		}
		t.Limit = math.Max(0.1*t.Mean, se.floor)
		t.Judged = len(xs) >= 3 && !math.IsNaN(t.PerMinute) && xs[len(xs)-1]-xs[0] >= minTrendSpan.Minutes()
		t.Flat = !t.Judged || t.Rise <= t.Limit
		out = append(out, t)
	}
	return out
}
