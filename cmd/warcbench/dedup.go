package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/store"
)

const dedupUsage = `Usage: warcbench dedup [--sizes 1M,10M] [--backends redis,embedded] [flags]

Fills dedup stores, opened as the proxy opens them (so whatever entry
layout the dedup package has), with fresh entries: random sha1 payload
digests in base32, URLs of about 100 characters over a few thousand hosts,
<urn:uuid:> record IDs and WARC dates, saved in batches of the Index's size
(500), several in flight. At each size it reports the cost per entry
(Redis: used_memory before the fill and after, and MEMORY USAGE of a
sample of keys; embedded: the bbolt file's size), lookups/s and the
p50/p99 time of lookup batches (1..64 keys, a mix of saved and new
digests, as many in flight as the Index has lookupers), and the p50/p99
time and the throughput of the last save batches before the size.

Redis is a private redis-server started on loopback with its default
configuration (no persistence), keys under the proxy's default prefix, or
the server of --redis-url, whose keys the bench writes under a prefix of
its own (wb-XXXXXX:, as long as the default) and removes at the end. The
bbolt file is in a temp dir under --dir, removed at the end.

--max-time bounds the whole run: each backend gets an equal share of what
is left when it starts and reports the size it reached when that is
spent. A progress line on a terminal; the table (or --json) on stdout.
Exit code 0 done (a size cut short by --max-time too), 1 runtime failure
or interrupted (the sizes measured before are printed on stderr), 2 bad
flags.

Flags:
`

func dedupBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warcbench dedup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisDefault, _ := exec.LookPath("redis-server")
	cfg := bench.DedupConfig{}
	sizes := fs.String("sizes", "1M", "entries to reach, ascending, comma-separated (20k, 1M, 10M); measured at each")
	backends := fs.String("backends", "redis,embedded", "stores to fill, in this order: redis, embedded")
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "a redis:// server to fill instead of a private one (its other keys are left alone)")
	fs.StringVar(&cfg.RedisBin, "redis", redisDefault, "redis-server binary for the private server")
	fs.StringVar(&cfg.Dir, "dir", os.TempDir(), "where the temp dir with the bbolt file and the private server's files goes")
	fs.DurationVar(&cfg.MaxTime, "max-time", 30*time.Minute, "bound on the whole run")
	fs.IntVar(&cfg.Lookups, "lookups", 100_000, "keys looked up at each size")
	fs.Float64Var(&cfg.HitRatio, "hit-ratio", 0.5, "share of the looked-up keys that were saved")
	urlTable := fs.Bool("dedup-url-table", true, "Redis: keep full URLs in the URL table, as the proxy's --dedup-url-table (false: hashes only)")
	fs.IntVar(&cfg.MaxLookupBatch, "lookup-batch", 64, "largest lookup batch (each is 1..N keys)")
	fs.IntVar(&cfg.SaveBatch, "save-batch", dedup.DefaultMaxBatch, "entries per save batch")
	fs.IntVar(&cfg.InFlight, "in-flight", 4, "save batches in flight while filling")
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "wait after a fill before reading Redis's used_memory")
	jsonOut := fs.Bool("json", false, "print one JSON object instead of the table")
	csvFile := fs.String("csv", "", "also write a CSV row per backend and size to this file")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), dedupUsage)
		fs.PrintDefaults()
	}
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	cfg.NoURLTable = !*urlTable
	if len(rest) > 0 {
		return usageError(stderr, "dedup")("unexpected arguments %q", rest)
	}
	if err := dedupFlags(&cfg, *sizes, *backends); err != nil {
		return exitCode(stderr, "dedup", err)
	}
	logOut := stderr
	if isTerminal(stderr) {
		cfg.Progress, logOut = stderr, bench.ClearLine(stderr)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logOut, nil)).With("component", "dedup-bench")
	res, err := bench.RunDedup(ctx, cfg)
	if err != nil {
		if res != nil && len(res.Points) > 0 {
			// What was measured before the failure or the interrupt.
			_ = res.WriteText(stderr)
		}
		return exitCode(stderr, "dedup", err)
	}
	if *jsonOut {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteText(stdout)
	}
	if err == nil && *csvFile != "" {
		err = writeFile(*csvFile, res.WriteCSV)
	}
	if err != nil {
		return exitCode(stderr, "dedup", fmt.Errorf("writing the report: %w", err))
	}
	return 0
}

// dedupFlags fills cfg's sizes and backends from the flags and checks
// the rest; every error is a *flagError.
func dedupFlags(cfg *bench.DedupConfig, sizes, backends string) error {
	for s := range strings.SplitSeq(sizes, ",") {
		n, err := bench.ParseCount(s)
		if err != nil {
			return badFlag("--sizes: %v", err)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	for b := range strings.SplitSeq(backends, ",") {
		cfg.Backends = append(cfg.Backends, strings.TrimSpace(b))
	}
	if err := cfg.Validate(); err != nil {
		return badFlag("%v", err)
	}
	if cfg.RedisURL != "" {
		sp, err := store.Parse(cfg.RedisURL)
		if err != nil || sp.Kind != store.Redis || sp.Cluster != nil {
			return badFlag("--redis-url %q: want redis://host:port/db (a Redis Cluster is not measured yet)", cfg.RedisURL)
		}
		return nil
	}
	for _, b := range cfg.Backends {
		if b != bench.DedupRedis {
			continue
		}
		if cfg.RedisBin == "" {
			return badFlag("no redis-server found: give --redis BINARY or --redis-url, or --backends embedded")
		}
		if _, err := exec.LookPath(cfg.RedisBin); err != nil {
			return badFlag("--redis: %v", err)
		}
	}
	return nil
}

// writeFile writes a file with write, closing it in every case.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
