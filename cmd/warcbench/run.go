package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/internal/bench"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// runFlags are the flags of warcbench run, as given.
type runFlags struct {
	replay       listFlag
	proxy        *string
	duration     *time.Duration
	n            *int64
	concurrency  *int
	method       *string
	mode         *string
	urlsFile     *string
	replayTarget *string
	insecure     *bool
	http2        *bool
	cacert       *string
	timeout      *time.Duration
	jsonOut      *bool
}

// newRunFlags declares the flags and usage of warcbench run.
func newRunFlags(stderr io.Writer) (*flag.FlagSet, *runFlags) {
	fs := flag.NewFlagSet("warcbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &runFlags{
		proxy:        fs.String("proxy", "", "proxy URL, e.g. http://127.0.0.1:8000 (default: direct)"),
		duration:     fs.Duration("duration", 0, "how long to make load (default 10s unless -n is given)"),
		n:            fs.Int64("n", 0, "number of requests (with --duration: whichever ends first)"),
		concurrency:  fs.Int("concurrency", 10, "requests in flight"),
		method:       fs.String("method", "GET", "GET or HEAD (replayed requests keep their own)"),
		mode:         fs.String("mode", bench.ModeKeepAlive, "keepalive (reuse connections) or new-conn (one connection per request)"),
		urlsFile:     fs.String("urls", "", "file of URLs, one a line, used round-robin with the URL arguments"),
		replayTarget: fs.String("replay-target", "", "send replayed requests to HOST:PORT (or http(s)://HOST:PORT to set the scheme too), keeping the path"),
		insecure:     fs.Bool("insecure", false, "skip TLS certificate verification (for a MITM proxy)"),
		http2:        fs.Bool("http2", false, "offer HTTP/2 (ALPN h2) on HTTPS connections, as browsers do: requests to one host share one connection as streams (through a proxy: inside its CONNECT tunnel); http:// URLs stay HTTP/1.1"),
		cacert:       fs.String("cacert", "", "PEM file of extra CA certificates to trust (e.g. warcproxy-ca.crt)"),
		timeout:      fs.Duration("timeout", 30*time.Second, "per-request timeout, connecting to reading the body"),
		jsonOut:      fs.Bool("json", false, "print one JSON object instead of text"),
	}
	// One flag under two names, so that -c50 is explained as --concurrency.
	fs.Var(fs.Lookup("concurrency").Value, "c", "short for --concurrency")
	fs.Var(&f.replay, "replay", "WARC file (.warc, .warc.gz or .warc.zst) whose request records are re-issued; repeatable, and with --replay the arguments are WARC files too")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: warcbench run [flags] URL...
       warcbench run [flags] --urls FILE
       warcbench run [flags] --replay FILE.warc[.gz|.zst] [FILE...] [--replay-target HOST:PORT]

Prints requests, successes, errors by kind (dial, timeout, tls, proxy,
status_4xx, status_5xx, read), URLs/s (successes), MB/s (body bytes) and
latency p50/p90/p99/max; a progress line each second when stderr is a
terminal. Exit code 0 even when errors were counted, 2 for bad flags.

Flags:
`)
		fs.PrintDefaults()
	}
	return fs, f
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, f := newRunFlags(stderr)
	rest, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	cfg, err := f.config(rest)
	if err != nil {
		return exitCode(stderr, "run", err)
	}
	if isTerminal(stderr) {
		cfg.Progress = stderr
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "warcbench run: %v\n", err)
		return 1
	}
	if *f.jsonOut {
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

// config is the load the flags and arguments ask for. A bad flag or
// argument is a *flagError; a --replay or --urls file that cannot be read
// is a runtime error.
func (f *runFlags) config(rest []string) (bench.RunConfig, error) {
	cfg := bench.RunConfig{
		Duration: *f.duration, N: *f.n, Concurrency: *f.concurrency, Method: strings.ToUpper(*f.method),
		Mode: *f.mode, Timeout: *f.timeout, Insecure: *f.insecure, HTTP2: *f.http2,
	}
	if cfg.N == 0 && cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if *f.proxy != "" {
		u, err := url.Parse(*f.proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, badFlag("bad --proxy %q: want http://HOST:PORT", *f.proxy)
		}
		cfg.Proxy = u
	}
	if *f.cacert != "" {
		pem, err := os.ReadFile(*f.cacert)
		if err != nil {
			return cfg, badFlag("reading --cacert: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, badFlag("--cacert %s: no PEM certificate in it", *f.cacert)
		}
		cfg.RootCAs = pool
	}
	var err error
	if cfg.Targets, err = f.targets(rest); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, badFlag("%v", err)
	}
	return cfg, nil
}

// targets are the requests to make: those of the --replay files (and of
// the arguments, WARC files too then), or else the URL arguments followed
// by the --urls file's.
func (f *runFlags) targets(rest []string) ([]bench.Target, error) {
	target, err := bench.ParseReplayTarget(*f.replayTarget)
	if err != nil {
		return nil, badFlag("%v", err)
	}
	if len(f.replay) > 0 {
		return bench.ReadReplay(append(f.replay, rest...), target)
	}
	if target != nil {
		return nil, badFlag("--replay-target needs --replay")
	}
	var ts []bench.Target
	for _, s := range rest {
		t, err := bench.ParseTarget(s)
		if err != nil {
			return nil, badFlag("%v", err)
		}
		ts = append(ts, t)
	}
	if *f.urlsFile != "" {
		more, err := bench.ReadURLFile(*f.urlsFile)
		if err != nil {
			return nil, err
		}
		ts = append(ts, more...)
	}
	return ts, nil
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
