package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Line is the one-line summary of the accounting.
func (a *Accounting) Line() string {
	verdict := "exact"
	if !a.Exact() {
		verdict = "NOT exact"
	}
	k := a.Kinds
	return fmt.Sprintf("accounting: %s: %d exchanges: %d whole, %d truncated by client abort, %d truncated by origin, "+
		"%d proxy errors (5xx/refused, not recorded), %d without response, %d interrupted; missing %d, duplicates %d, wrong truncation %d, unexpected %d",
		verdict, a.Total(func(c *KindCount) int64 { return c.Exchanges }),
		k[OutWhole].Exchanges, k[OutClientAbort].Exchanges, k[OutOriginCut].Exchanges, k[OutProxyError].Exchanges, k[OutNoResponse].Exchanges, k[OutInterrupted].Exchanges,
		a.Total(func(c *KindCount) int64 { return c.Missing }), a.Total(func(c *KindCount) int64 { return c.Duplicates }),
		a.Total(func(c *KindCount) int64 { return c.WrongTrunc }),
		a.Total(func(c *KindCount) int64 { return c.Unexpected })+a.Unknown)
}

// WriteSoakReport writes the text report.
func WriteSoakReport(w io.Writer, r *SoakResult) error {
	var b strings.Builder
	c := r.Config
	sec := r.Elapsed.Seconds()
	fmt.Fprintf(&b, "warcbench soak: %s at concurrency %d, proxy %s --socket-timeout %s\n", c.Duration, c.Concurrency, c.ProxyBin, c.SocketTimeout)
	switch {
	case r.RedisAddr != "" && r.RedisRestart > 0:
		fmt.Fprintf(&b, "stores: redis-server on %s, restarted at %s\n", r.RedisAddr, r.RedisRestart.Round(time.Second))
	case r.RedisAddr != "":
		fmt.Fprintf(&b, "stores: redis-server on %s, not restarted (the run ended first)\n", r.RedisAddr)
	default:
		fmt.Fprintf(&b, "stores: embedded (no redis)\n")
	}
	if u := r.Upload; u != nil {
		fmt.Fprintf(&b, "uploads: to versitygw at %s (--cdxj, --upload-webhook), killed at %s and restarted %s later\n",
			u.Endpoint, u.Restart.Round(time.Second), u.Down)
	}
	fmt.Fprintf(&b, "load: %d requests in %.1fs (%.1f URLs/s, %.1f MB/s); keep-alive %d, new-conn %d; http %d, https %d\n",
		r.Requests, sec, float64(r.Requests)/sec, float64(r.Bytes)/sec/1e6, r.KeepAlive, r.NewConn, r.HTTP, r.HTTPS)
	exit := fmt.Sprintf("code %d", r.ExitCode)
	if r.ExitErr != nil {
		exit += fmt.Sprintf(" (%v)", r.ExitErr)
	}
	fmt.Fprintf(&b, "proxy exit after SIGTERM: %s, drain %.2fs\n", exit, r.Drain.Seconds())
	when := "as the proxy closed them"
	if r.Upload != nil {
		when = "from the bucket as the store confirmed them"
	}
	fmt.Fprintf(&b, "WARCs: %d files, %.1f MB, read for the accounting %s", r.WARCFiles, float64(r.WARCBytes)/1e6, when)
	if !c.KeepWARCs {
		b.WriteString(" and then deleted (--keep-warcs keeps them)")
	}
	b.WriteString("\n")
	if u := r.Upload; u != nil {
		fmt.Fprintf(&b, "shipped: WARCs read from the bucket as their completion events came; events %d (%d distinct, %d repeats); "+
			"WARC events whose object was missing %d; WARCs in the bucket without an event %d; closed files left in --dir %d\n",
			u.Events, u.Distinct, u.Events-u.Distinct, u.NotFound, u.Unannounced, u.LocalLeft)
	}
	if r.AccountingErr != nil {
		fmt.Fprintf(&b, "reading the WARCs: %v\n", r.AccountingErr)
	}
	b.WriteString(r.Accounting.Line() + "\n")
	fmt.Fprintf(&b, "  %-14s %9s %9s %8s %10s %11s %10s\n", "kind", "exchanges", "recorded", "missing", "duplicates", "wrong trunc", "unexpected")
	for _, name := range soakOutcomes {
		k := r.Accounting.Kinds[name]
		fmt.Fprintf(&b, "  %-14s %9d %9d %8d %10d %11d %10d\n", name, k.Exchanges, k.Recorded, k.Missing, k.Duplicates, k.WrongTrunc, k.Unexpected)
	}
	fmt.Fprintf(&b, "  records matching no request: %d; records of requests whose client saw no response (allowed, truncated): %d; requests the client's transport sent more than once: %d\n",
		r.Accounting.Unknown, r.Accounting.Total(func(c *KindCount) int64 { return c.RecordedNoHead }), r.Accounting.Total(func(c *KindCount) int64 { return c.Retried }))
	fmt.Fprintf(&b, "trends over the last half (least squares; flat: fitted rise over the half <= max(10%% of mean, floor); falls are flat):\n")
	for _, t := range r.Trends {
		flat := "flat"
		switch {
		case !t.Judged:
			flat = "not judged (last half under 1m)"
		case !t.Flat:
			flat = "NOT flat"
		}
		fmt.Fprintf(&b, "  %-10s %+9.3f/min  mean %9.1f  rise %+8.1f  limit %7.1f  %s\n", t.Name, t.PerMinute, t.Mean, t.Rise, t.Limit, flat)
	}
	if n := len(r.Samples); n > 0 {
		fmt.Fprintf(&b, "samples: %d every %s; peak rss %.1f MB, peak go heap %.1f MB, peak fds %.0f, peak goroutines %.0f, peak queue %.0f\n",
			n, c.Sample, peak(r.Samples, func(s SoakSample) float64 { return s.RSSMB }), peak(r.Samples, func(s SoakSample) float64 { return s.HeapMB }),
			peak(r.Samples, func(s SoakSample) float64 { return s.FDs }),
			peak(r.Samples, func(s SoakSample) float64 { return s.Goroutines }), peak(r.Samples, func(s SoakSample) float64 { return s.Queue }))
	}
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "verdict: %s\n", verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func peak(ss []SoakSample, f func(SoakSample) float64) float64 {
	m := math.NaN()
	for _, s := range ss {
		if v := f(s); !math.IsNaN(v) && (math.IsNaN(m) || v > m) {
			m = v
		}
	}
	return m
}

// WriteSoakCSV writes one row per sample.
func WriteSoakCSV(w io.Writer, ss []SoakSample) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"t_s", "rss_mb", "fds", "goroutines", "queue", "urls_per_s", "heap_mb", "upload_backlog_mb"})
	f := func(v float64, prec int) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	for _, s := range ss {
		_ = cw.Write([]string{f(s.T.Seconds(), 1), f(s.RSSMB, 1), f(s.FDs, 0), f(s.Goroutines, 0), f(s.Queue, 0), f(s.URLsPerSec, 1), f(s.HeapMB, 1), f(s.BacklogMB, 1)})
	}
	cw.Flush()
	return cw.Error()
}
