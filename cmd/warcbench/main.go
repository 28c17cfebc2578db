// Command warcbench loads HTTP servers and proxies, warcproxy in
// particular: `origin` serves synthetic bodies, `run` makes load, direct or
// through a proxy, from URLs or by replaying the requests of WARC files;
// `sweep` runs the proxy binary over a grid of settings and tabulates it.
// This file only parses flags and dispatches; the work is in
// internal/bench. Exit codes: 0 done (even with errors counted), 1 runtime
// failure (or, for sweep, a failed records check), 2 bad flags.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
)

const usage = `Usage: warcbench COMMAND [flags]

Commands:
  origin   serve synthetic bodies over HTTP and HTTPS (a load target)
  run      make load, direct or through a proxy, and report URLs/s, MB/s, latency
  sweep    start the proxy for each combination of settings, load it, check its WARCs

Run warcbench COMMAND --help for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "origin":
		return origin(ctx, args[1:], stdout, stderr)
	case "run":
		return runLoad(ctx, args[1:], stdout, stderr)
	case "sweep":
		return sweep(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "warcbench: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// parse parses flags that may come before, between or after the
// positional arguments, and returns those. ok is false with the exit code
// to use (0 for --help).
func parse(fs *flag.FlagSet, args []string) (rest []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, 0, true
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), 0, true
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

func origin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warcbench origin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	address := fs.String("address", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8080, "HTTP port (0: any free port)")
	tlsPort := fs.Int("tls-port", -1, "HTTPS port with a self-signed ECDSA certificate (0: any free port; -1: no HTTPS)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: warcbench origin [--address A] [--port N] [--tls-port M]

Serves, over HTTP (and HTTPS with --tls-port):
  /bytes/N              N bytes with Content-Length (N: 512, 16KB, 4MB, ...)
  /stream/CHUNK/COUNT   COUNT writes of CHUNK bytes, each flushed (chunked encoding)
  /delay/MS             a 3-byte body after MS milliseconds
  /status/CODE          that status code
Query: ?text=1 text-like bodies (~4:1 under gzip; default incompressible),
       ?gzip=1 Content-Encoding: gzip (sizes count decoded bytes).
Bodies of /bytes and /stream differ from one request to the next (a moving
window over a fixed buffer), so a recording proxy's dedup finds no duplicates,
except for ?gzip=1 bodies, which are compressed once per size and repeat.

Flags:
`)
		fs.PrintDefaults()
	}
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "warcbench origin: unexpected arguments %q\n", rest)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "origin")
	srv, err := bench.ListenOrigin(*address, *port, *tlsPort, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	for _, u := range srv.URLs() {
		fmt.Fprintln(stdout, u)
	}
	if err := srv.Serve(ctx); err != nil {
		logger.Error("serving", "err", err)
		return 1
	}
	return 0
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("warcbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		replay       listFlag
		proxy        = fs.String("proxy", "", "proxy URL, e.g. http://127.0.0.1:8000 (default: direct)")
		duration     = fs.Duration("duration", 0, "how long to make load (default 10s unless -n is given)")
		n            = fs.Int64("n", 0, "number of requests (with --duration: whichever ends first)")
		concurrency  = fs.Int("concurrency", 10, "requests in flight")
		method       = fs.String("method", "GET", "GET or HEAD (replayed requests keep their own)")
		mode         = fs.String("mode", bench.ModeKeepAlive, "keepalive (reuse connections) or new-conn (one connection per request)")
		urlsFile     = fs.String("urls", "", "file of URLs, one a line, used round-robin with the URL arguments")
		replayTarget = fs.String("replay-target", "", "send replayed requests to HOST:PORT (or http(s)://HOST:PORT to set the scheme too), keeping the path")
		insecure     = fs.Bool("insecure", false, "skip TLS certificate verification (for a MITM proxy)")
		cacert       = fs.String("cacert", "", "PEM file of extra CA certificates to trust (e.g. warcproxy-ca.crt)")
		timeout      = fs.Duration("timeout", 30*time.Second, "per-request timeout, connecting to reading the body")
		jsonOut      = fs.Bool("json", false, "print one JSON object instead of text")
	)
	fs.IntVar(concurrency, "c", 10, "short for --concurrency")
	fs.Var(&replay, "replay", "WARC file (.warc or .warc.gz) whose request records are re-issued; repeatable, and with --replay the arguments are WARC files too")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: warcbench run [flags] URL...
       warcbench run [flags] --urls FILE
       warcbench run [flags] --replay FILE.warc[.gz] [FILE.warc[.gz]...] [--replay-target HOST:PORT]

Prints requests, successes, errors by kind (dial, timeout, tls, proxy,
status_4xx, status_5xx, read), URLs/s (successes), MB/s (body bytes) and
latency p50/p90/p99/max; a progress line each second when stderr is a
terminal. Exit code 0 even when errors were counted, 2 for bad flags.

Flags:
`)
		fs.PrintDefaults()
	}
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	bad := usageError(stderr, "run")

	cfg := bench.RunConfig{
		Duration: *duration, N: *n, Concurrency: *concurrency, Method: strings.ToUpper(*method),
		Mode: *mode, Timeout: *timeout, Insecure: *insecure,
	}
	if cfg.N == 0 && cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if *proxy != "" {
		u, err := url.Parse(*proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("bad --proxy %q: want http://HOST:PORT", *proxy)
		}
		cfg.Proxy = u
	}
	if *cacert != "" {
		pem, err := os.ReadFile(*cacert)
		if err != nil {
			return bad("reading --cacert: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return bad("--cacert %s: no PEM certificate in it", *cacert)
		}
		cfg.RootCAs = pool
	}
	target, err := bench.ParseReplayTarget(*replayTarget)
	if err != nil {
		return bad("%v", err)
	}
	if len(replay) > 0 {
		ts, err := bench.ReadReplay(append(replay, rest...), target)
		if err != nil {
			fmt.Fprintf(stderr, "warcbench run: %v\n", err)
			return 1
		}
		cfg.Targets = ts
	} else {
		if target != nil {
			return bad("--replay-target needs --replay")
		}
		for _, s := range rest {
			t, err := bench.ParseTarget(s)
			if err != nil {
				return bad("%v", err)
			}
			cfg.Targets = append(cfg.Targets, t)
		}
		if *urlsFile != "" {
			ts, err := bench.ReadURLFile(*urlsFile)
			if err != nil {
				fmt.Fprintf(stderr, "warcbench run: %v\n", err)
				return 1
			}
			cfg.Targets = append(cfg.Targets, ts...)
		}
	}
	if err := cfg.Validate(); err != nil {
		return bad("%v", err)
	}
	if isTerminal(stderr) {
		cfg.Progress = stderr
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "warcbench run: %v\n", err)
		return 1
	}
	if *jsonOut {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "warcbench run: writing the report: %v\n", err)
		return 1
	}
	return 0
}

// isTerminal tells whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// usageError returns a function that reports a bad flag of subcommand cmd
// and gives the exit code for it (2).
func usageError(stderr io.Writer, cmd string) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		fmt.Fprintf(stderr, "warcbench "+cmd+": "+format+"\nRun warcbench "+cmd+" --help for usage.\n", a...)
		return 2
	}
}
