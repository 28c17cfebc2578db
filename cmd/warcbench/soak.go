package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/s3proc"
)

const soakUsage = `Usage: warcbench soak [flags]

Starts an origin (HTTP and HTTPS) on 127.0.0.1, a private redis-server
(unless --redis=""), and the proxy binary with a fresh WARC dir
(OUT/warcs) and --socket-timeout, then loads it for --duration with mixed
traffic: keep-alive and new connections, HTTP and HTTPS through the MITM
(trusting the proxy's CA), bodies of 1 KB to 8 MB (mostly small), and a
few percent of faults: clients that hang up mid-body, origins that reset,
stall past the socket timeout or send garbage. Redis is restarted half way.
Every --sample it reads the proxy's RSS, open fds, goroutines, writer queue
and URLs/s. At the end it stops the proxy with SIGTERM (exit code, drain
time) and accounts for every exchange in the WARCs by its unique URL: one
record, marked WARC-Truncated when the client or the origin broke off, none
for the proxy's own errors. It fits RSS, fds and goroutines over the last
half (least squares, per minute) and calls each flat when the fitted rise
over that half is within max(10% of its mean, a floor); a last half under
a minute is not judged.

Writes the report to stdout and OUT/soak.txt, the samples to OUT/soak.csv
and a chart to OUT/soak.svg. Exit code 0 when the accounting is exact, the
proxy exited 0 and the trends are flat; 1 otherwise; 2 for bad flags.

Flags:
`

func soak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warcbench soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisDefault, _ := exec.LookPath("redis-server")
	cfg := bench.SoakConfig{}
	fs.StringVar(&cfg.ProxyBin, "proxy-bin", "./bin/warcproxy", "the warcproxy binary to start")
	fs.StringVar(&cfg.OutDir, "out", "./soak-out", "output dir: soak.txt, soak.csv, soak.svg, the CA file and the WARCs (warcs/)")
	fs.StringVar(&cfg.RedisBin, "redis", redisDefault, `redis-server binary for --dedup-db/--stats-db ("": embedded stores, no restart)`)
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Minute, "how long to load")
	fs.IntVar(&cfg.Concurrency, "concurrency", 20, "client workers")
	fs.DurationVar(&cfg.Sample, "sample", 5*time.Second, "interval between samples of the proxy")
	fs.DurationVar(&cfg.SocketTimeout, "socket-timeout", 2*time.Second, "the proxy's --socket-timeout (stalling origins stall 2.5 times as long)")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Minute, "per-request client timeout")
	fs.BoolVar(&cfg.KeepWARCs, "keep-warcs", false, "keep the WARC files in OUT/warcs (by default each is read for the accounting and deleted as soon as the proxy closes it, so that disk use stays flat)")
	fs.StringVar(&cfg.UploadStore, "upload-store", "", `ship to an S3 store while soaking: a versitygw binary, or "auto" to find the one make versitygw builds. The proxy gets --upload-to, --cdxj and --upload-webhook; the store is killed half way and restarted 10s later; the accounting reads the bucket, each WARC once its completion event came`)
	verbose := fs.Bool("v", false, "log each sample")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), soakUsage)
		fs.PrintDefaults()
	}
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		return usageError(stderr, "soak")("unexpected arguments %q", rest)
	}
	if err := cfg.Validate(); err != nil {
		return exitCode(stderr, "soak", badFlag("%v", err))
	}
	if _, err := os.Stat(cfg.ProxyBin); err != nil {
		return exitCode(stderr, "soak", badFlag("--proxy-bin: %v (build it with make build)", err))
	}
	if cfg.RedisBin != "" {
		if _, err := exec.LookPath(cfg.RedisBin); err != nil {
			return exitCode(stderr, "soak", badFlag("--redis: %v", err))
		}
	}
	if cfg.UploadStore == "auto" {
		bin, err := s3proc.Binary()
		if err != nil {
			return exitCode(stderr, "soak", badFlag("--upload-store auto: %v; %s", err, s3proc.InstallHint))
		}
		cfg.UploadStore = bin
	}
	if cfg.UploadStore != "" {
		if _, err := exec.LookPath(cfg.UploadStore); err != nil {
			return exitCode(stderr, "soak", badFlag("--upload-store: %v", err))
		}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "soak")
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return exitCode(stderr, "soak", err)
	}
	res, err := bench.Soak(ctx, cfg)
	if err != nil {
		return exitCode(stderr, "soak", err)
	}
	if err := writeSoakOutputs(stdout, cfg.OutDir, res); err != nil {
		return exitCode(stderr, "soak", err)
	}
	if !res.OK() {
		return 1
	}
	return 0
}

// writeSoakOutputs prints the report and writes OUT/soak.{txt,csv,svg}.
func writeSoakOutputs(stdout io.Writer, dir string, res *bench.SoakResult) error {
	if err := bench.WriteSoakReport(stdout, res); err != nil {
		return err
	}
	for _, o := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"soak.txt", func(w io.Writer) error { return bench.WriteSoakReport(w, res) }},
		{"soak.csv", func(w io.Writer) error { return bench.WriteSoakCSV(w, res.Samples) }},
		{"soak.svg", func(w io.Writer) error { return bench.WriteSoakSVG(w, res.Samples) }},
	} {
		f, err := os.Create(filepath.Join(dir, o.name))
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.name, err)
		}
		err = o.write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.name, err)
		}
	}
	return nil
}
