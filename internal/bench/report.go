package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// progress writes a line each second until done, then ends it.
func progress(w io.Writer, start time.Time, lv *live, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastReq, lastBytes int64
	last := start
	for {
		select {
		case <-done:
			_, _ = fmt.Fprint(w, "\r\033[K")
			return
		case now := <-t.C:
			req, errs, b := lv.requests.Load(), lv.errors.Load(), lv.bytes.Load()
			dt := now.Sub(last).Seconds()
			_, _ = fmt.Fprintf(w, "\r\033[K%6.0fs  %d requests  %d errors  %.0f URLs/s  %.1f MB/s",
				now.Sub(start).Seconds(), req, errs, float64(req-lastReq)/dt, float64(b-lastBytes)/dt/1e6)
			lastReq, lastBytes, last = req, b, now
		}
	}
}

// Summary is the JSON form of a Result (--json): rates per second, sizes in
// bytes, latencies in milliseconds.
type Summary struct {
	Requests     int64            `json:"requests"`
	Successes    int64            `json:"successes"`
	Errors       int64            `json:"errors"`
	ErrorKinds   map[string]int64 `json:"error_kinds"`
	Status       map[string]int64 `json:"status"`
	Protocols    map[string]int64 `json:"protocols"` // responses by protocol
	ElapsedSec   float64          `json:"elapsed_seconds"`
	URLsPerSec   float64          `json:"urls_per_second"` // successes per second
	ReqPerSec    float64          `json:"requests_per_second"`
	BodyBytes    int64            `json:"body_bytes"`
	MBPerSec     float64          `json:"mb_per_second"` // body bytes, 10^6
	LatencyP50   float64          `json:"latency_p50_ms"`
	LatencyP90   float64          `json:"latency_p90_ms"`
	LatencyP99   float64          `json:"latency_p99_ms"`
	LatencyMax   float64          `json:"latency_max_ms"`
	LatencyCount uint64           `json:"latency_count"` // responses timed
}

// Summary computes the figures of r.
func (r *Result) Summary() Summary {
	s := Summary{
		Requests: r.Requests, Successes: r.Successes, ErrorKinds: r.Errors,
		Status: map[string]int64{}, Protocols: r.Protocols, ElapsedSec: r.Elapsed.Seconds(), BodyBytes: r.BodyBytes,
		LatencyP50:   ms(r.Latency.Quantile(0.50)),
		LatencyP90:   ms(r.Latency.Quantile(0.90)),
		LatencyP99:   ms(r.Latency.Quantile(0.99)),
		LatencyMax:   ms(r.Latency.Max()),
		LatencyCount: r.Latency.Count(),
	}
	for _, n := range r.Errors {
		s.Errors += n
	}
	for code, n := range r.Status {
		s.Status[fmt.Sprint(code)] = n
	}
	if sec := r.Elapsed.Seconds(); sec > 0 {
		s.URLsPerSec = float64(r.Successes) / sec
		s.ReqPerSec = float64(r.Requests) / sec
		s.MBPerSec = float64(r.BodyBytes) / sec / 1e6
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteJSON writes r's summary as one JSON object and a newline.
func (r *Result) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r.Summary())
}

// WriteText writes r's summary for people.
func (r *Result) WriteText(w io.Writer) error {
	s := r.Summary()
	var b strings.Builder
	fmt.Fprintf(&b, "requests   %d in %.2fs (%d ok, %d errors)\n", s.Requests, s.ElapsedSec, s.Successes, s.Errors)
	fmt.Fprintf(&b, "URLs/s     %.1f\n", s.URLsPerSec)
	fmt.Fprintf(&b, "MB/s       %.2f (%d body bytes)\n", s.MBPerSec, s.BodyBytes)
	fmt.Fprintf(&b, "latency    p50 %.3fms  p90 %.3fms  p99 %.3fms  max %.3fms\n", s.LatencyP50, s.LatencyP90, s.LatencyP99, s.LatencyMax)
	if len(s.ErrorKinds) > 0 {
		b.WriteString("errors    ")
		for _, k := range slices.Sorted(maps.Keys(s.ErrorKinds)) {
			fmt.Fprintf(&b, " %s=%d", k, s.ErrorKinds[k])
		}
		b.WriteString("\n")
	}
	if len(s.Protocols) > 0 {
		b.WriteString("protocols ")
		for _, k := range slices.Sorted(maps.Keys(s.Protocols)) {
			fmt.Fprintf(&b, " %s=%d", k, s.Protocols[k])
		}
		b.WriteString("\n")
	}
	if len(s.Status) > 0 {
		b.WriteString("status    ")
		for _, k := range slices.Sorted(maps.Keys(s.Status)) {
			fmt.Fprintf(&b, " %s=%d", k, s.Status[k])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
