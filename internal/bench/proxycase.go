package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// drainTimeout bounds how long a proxy may take to exit after SIGTERM.
const drainTimeout = 5 * time.Minute

// runProxyCase starts a proxy for one setting, loads through it, stops it
// and checks its WARCs. noWARC starts it with --prefix - and skips the
// check. Only failures to start the proxy are errors; a bad exit or a
// records mismatch is a failed check in the row.
func runProxyCase(ctx context.Context, cfg *SweepConfig, out string, caseNo int, run RunConfig, ps proxySetting, noWARC bool, logger *slog.Logger) (SweepRow, error) {
	dir := filepath.Join(out, fmt.Sprintf("case-%03d", caseNo))
	if err := os.RemoveAll(dir); err != nil {
		return SweepRow{}, fmt.Errorf("clearing %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SweepRow{}, fmt.Errorf("making %s: %w", dir, err)
	}
	args := []string{
		"--address", "127.0.0.1", "--port", "0", "--dir", dir,
		"--cacert", filepath.Join(out, "warcbench-ca.pem"), "--metrics-address", "127.0.0.1:0",
		"--max-conns", strconv.Itoa(ps.maxConns), "--writer-workers", strconv.Itoa(ps.workers),
		"--compression", ps.compression,
		// A fresh dedup and stats database per case, beside its WARCs.
		"--dedup-db", "embedded:" + filepath.Join(dir, "warcproxy.db"),
		"--stats-db", "embedded:" + filepath.Join(dir, "warcproxy.db"),
	}
	switch ps.compression {
	case "gzip":
		args = append(args, "--gzip-level", strconv.Itoa(ps.level))
	case "zstd":
		args = append(args, "--zstd-level", strconv.Itoa(ps.level))
	}
	if noWARC {
		args = append(args, "--prefix", "-")
	}
	args = append(args, cfg.ExtraArgs...)
	logger.Debug("starting proxy", "case", caseNo, "args", args)
	p, err := startProxy(ctx, cfg.ProxyBin, args)
	if err != nil {
		return SweepRow{}, err
	}
	run.Proxy = &url.URL{Scheme: "http", Host: "127.0.0.1:" + p.port}
	res, runErr := Run(ctx, run)
	drain, exitErr := p.stop(drainTimeout)

	var r SweepRow
	if runErr != nil {
		return SweepRow{}, fmt.Errorf("load through the proxy: %w", runErr)
	}
	r = loadRow(res)
	r.Kind = KindProxy
	if noWARC {
		r.Kind = KindNoWARC
	}
	r.DrainSec = drain.Seconds()
	p.mu.Lock()
	r.PeakRSSMB = float64(p.peakRSS) / (1 << 20)
	cpu := float64(p.cpuTicks) / clockTicks
	p.mu.Unlock()
	if ps := p.cmd.ProcessState; ps != nil {
		// Exact totals once it has exited: CPU including the drain, and
		// the kernel's own peak RSS (ru_maxrss, in KiB on Linux).
		cpu = max(cpu, (ps.UserTime() + ps.SystemTime()).Seconds())
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.PeakRSSMB = max(r.PeakRSSMB, float64(ru.Maxrss)/1024)
		}
	}
	r.CPUSec = cpu

	warcBytes, records, scanErr := scanWARCs(dir)
	if sec := (res.Elapsed + drain).Seconds(); sec > 0 {
		r.WARCMBps = float64(warcBytes) / sec / 1e6
	}
	if r.URLs > 0 {
		r.WARCKBPerURL = float64(warcBytes) / float64(r.URLs) / 1e3
	}
	r.Records = records
	var notes []string
	if exitErr != nil {
		notes = append(notes, fmt.Sprintf("proxy exit: %v", exitErr))
		logger.Warn("proxy did not exit cleanly", "case", caseNo, "err", exitErr, "stderr", p.stderr.String())
	}
	if noWARC {
		r.RecordsOK = "-"
	} else {
		ok := exitErr == nil && scanErr == nil && records == r.URLs
		if scanErr != nil {
			notes = append(notes, fmt.Sprintf("reading warcs: %v", scanErr))
		}
		if records != r.URLs {
			notes = append(notes, fmt.Sprintf("%d records for %d successful requests", records, r.URLs))
		}
		r.RecordsOK = strconv.FormatBool(ok)
	}
	if exitErr != nil && noWARC {
		r.RecordsOK = "false"
	}
	r.Note = strings.Join(notes, "; ")
	if !cfg.Keep && r.RecordsOK != "false" {
		if err := os.RemoveAll(dir); err != nil {
			return r, fmt.Errorf("removing %s: %w", dir, err)
		}
	} else if !cfg.Keep {
		// Keep a failed case's WARCs to look at.
		logger.Info("keeping the warcs of a failed case", "dir", dir)
	}
	return r, nil
}
