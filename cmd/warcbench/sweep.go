package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
)

// splitList splits a comma list, trimming blanks.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("--%s: bad number %q", name, p)
		}
		out = append(out, n)
	}
	return out, nil
}

func boolList(name, s string) ([]bool, error) {
	var out []bool
	for _, p := range splitList(s) {
		b, err := strconv.ParseBool(p)
		if err != nil {
			return nil, fmt.Errorf("--%s: bad boolean %q", name, p)
		}
		out = append(out, b)
	}
	return out, nil
}

// sweepFlags are the flags of warcbench sweep, as given.
type sweepFlags struct {
	proxyBin, outDir, path, extra *string
	keep, baselines, verbose      *bool
	duration, timeout             *time.Duration
	n                             *int64
	// Comma lists: a case per combination of their values.
	maxConns, workers, compression, gzip, gzipLevel, zstdLevel, conc, size, text, mode, tlsList *string
}

// newSweepFlags declares the flags and usage of warcbench sweep.
func newSweepFlags(stderr io.Writer) (*flag.FlagSet, *sweepFlags) {
	fs := flag.NewFlagSet("warcbench sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &sweepFlags{
		proxyBin:    fs.String("proxy-bin", "./bin/warcproxy", "the warcproxy binary to start for each case"),
		outDir:      fs.String("out", "./bench-out", "output dir: sweep.csv, sweep.svg, the CA file and per-case WARC dirs"),
		keep:        fs.Bool("keep", false, "keep the per-case WARC dirs (by default deleted once checked, unless the check failed)"),
		duration:    fs.Duration("duration", 0, "load per case (default 20s unless -n is given)"),
		n:           fs.Int64("n", 0, "requests per case (with --duration: whichever ends first)"),
		timeout:     fs.Duration("timeout", 30*time.Second, "per-request timeout"),
		maxConns:    fs.String("max-conns", "1000", "proxy --max-conns values, comma separated"),
		workers:     fs.String("writer-workers", "1,2,4", "proxy --writer-workers values"),
		compression: fs.String("compression", "", "proxy --compression values: gzip, zstd, none, e.g. gzip,zstd (gzip if neither this nor --gzip is given)"),
		gzip:        fs.String("gzip", "", "older form of --compression: true (gzip), false (none) or true,false"),
		gzipLevel:   fs.String("gzip-level", "0", "proxy --gzip-level values, for gzip (0: the library default)"),
		zstdLevel:   fs.String("zstd-level", "3", "proxy --zstd-level values, for zstd (1-22, as the zstd command's)"),
		conc:        fs.String("concurrency", "50", "load concurrency values (may exceed --max-conns)"),
		size:        fs.String("size", "16KB", "body sizes (/bytes/SIZE), e.g. 16KB,256KB,4MB"),
		text:        fs.String("text", "false", "text-like (compressible) bodies: true, false or both"),
		mode:        fs.String("mode", bench.ModeKeepAlive, "client modes: keepalive, new-conn or both"),
		tlsList:     fs.String("tls", "false", "HTTPS through the MITM (true) or plain HTTP (false), or both"),
		path:        fs.String("path", "", "origin path instead of /bytes/SIZE, e.g. /delay/100"),
		extra:       fs.String("extra-args", "", "more arguments for every proxy, split on spaces, e.g. \"--method-filter POST\""),
		baselines:   fs.Bool("baselines", true, "per load group, rows for direct load and for a proxy with --prefix - (no recording)"),
		verbose:     fs.Bool("v", false, "log each proxy start"),
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: warcbench sweep [flags]

Starts an origin on 127.0.0.1, then for every combination of the list
flags starts the proxy binary with a fresh WARC dir, loads through it,
stops it with SIGTERM (timing the drain) and checks that its WARCs hold one
response record per successful request. Prints what every case runs (the
settings held fixed; those varied are in each row's label), a row per case
as it finishes, then writes OUT/sweep.csv (the same columns, then the
workload: a column per setting, on every row) and OUT/sweep.svg (URLs/s per
setting, titled with the workload). Exit code 0 when every records check
passed, 1 otherwise, 2 for bad flags. See docs/cli.md.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs, f
}

func sweep(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newSweepFlags(stderr)
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(stderr, "sweep")("unexpected arguments %q", rest)
	}
	cfg, err := f.config()
	if err != nil {
		return exitCode(stderr, "sweep", err)
	}
	level := slog.LevelInfo
	if *f.verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "sweep")

	wl := cfg.Workload()
	fmt.Fprintln(stdout, wl.Title())
	for _, l := range wl.Caption() {
		fmt.Fprintln(stdout, l)
	}
	tw, err := bench.NewTableWriter(stdout, cfg.SettingLabels())
	if err != nil {
		fmt.Fprintf(stderr, "warcbench sweep: %v\n", err)
		return 1
	}
	cfg.Row = func(r bench.SweepRow) { _ = tw.Write(r) }
	rows, sweepErr := bench.Sweep(ctx, cfg)
	if len(rows) > 0 {
		if err := writeOutputs(cfg.OutDir, wl, rows); err != nil {
			fmt.Fprintf(stderr, "warcbench sweep: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(cfg.OutDir, "sweep.csv"), filepath.Join(cfg.OutDir, "sweep.svg"))
	}
	if sweepErr != nil {
		fmt.Fprintf(stderr, "warcbench sweep: %v\n", sweepErr)
		return 1
	}
	return 0
}

// config is the grid the flags ask for; every error is a *flagError.
func (f *sweepFlags) config() (bench.SweepConfig, error) {
	cfg := bench.SweepConfig{
		ProxyBin: *f.proxyBin, OutDir: *f.outDir, Keep: *f.keep, Duration: *f.duration, N: *f.n, Timeout: *f.timeout,
		Size: splitList(*f.size), Mode: splitList(*f.mode), Path: *f.path, ExtraArgs: strings.Fields(*f.extra),
		Baselines: *f.baselines,
	}
	if cfg.N == 0 && cfg.Duration == 0 {
		cfg.Duration = 20 * time.Second
	}
	var errs []error
	var err error
	if cfg.MaxConns, err = intList("max-conns", *f.maxConns); err != nil {
		errs = append(errs, err)
	}
	if cfg.WriterWorkers, err = intList("writer-workers", *f.workers); err != nil {
		errs = append(errs, err)
	}
	if cfg.GzipLevel, err = intList("gzip-level", *f.gzipLevel); err != nil {
		errs = append(errs, err)
	}
	if cfg.Concurrency, err = intList("concurrency", *f.conc); err != nil {
		errs = append(errs, err)
	}
	if cfg.ZstdLevel, err = intList("zstd-level", *f.zstdLevel); err != nil {
		errs = append(errs, err)
	}
	if cfg.Compression, err = f.compressions(); err != nil {
		errs = append(errs, err)
	}
	if cfg.Text, err = boolList("text", *f.text); err != nil {
		errs = append(errs, err)
	}
	if cfg.TLS, err = boolList("tls", *f.tlsList); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, badFlag("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, badFlag("%v", err)
	}
	if _, err := os.Stat(cfg.ProxyBin); err != nil {
		return cfg, badFlag("--proxy-bin: %v (build it with make build)", err)
	}
	return cfg, nil
}

// compressions are the --compression values, or those --gzip stands for.
func (f *sweepFlags) compressions() ([]string, error) {
	switch {
	case *f.gzip != "" && *f.compression != "":
		return nil, errors.New("--gzip and --compression: give --compression alone (--gzip true is gzip, false none)")
	case *f.gzip == "" && *f.compression == "":
		return []string{"gzip"}, nil
	case *f.compression != "":
		return splitList(*f.compression), nil
	}
	gz, err := boolList("gzip", *f.gzip)
	var out []string
	for _, b := range gz {
		out = append(out, map[bool]string{true: "gzip", false: "none"}[b])
	}
	return out, err
}

func writeOutputs(dir string, wl bench.Workload, rows []bench.SweepRow) error {
	for _, o := range []struct {
		name  string
		write func(io.Writer, bench.Workload, []bench.SweepRow) error
	}{{"sweep.csv", bench.WriteSweepCSV}, {"sweep.svg", bench.WriteSweepSVG}} {
		f, err := os.Create(filepath.Join(dir, o.name))
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.name, err)
		}
		err = o.write(f, wl, rows)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.name, err)
		}
	}
	return nil
}
