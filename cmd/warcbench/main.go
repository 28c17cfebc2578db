// Command warcbench loads HTTP servers and proxies, warcproxy in
// particular: `origin` serves synthetic bodies, `run` makes load, direct or
// through a proxy, from URLs or by replaying the requests of WARC files;
// `sweep` runs the proxy binary over a grid of settings and tabulates it;
// `soak` loads one proxy long with mixed and faulty traffic and checks for
// leaks and that its WARCs account for every exchange; `dedup` fills the
// dedup stores to millions of entries and measures them as they grow.
// This file only parses flags and dispatches; the work is in
// internal/bench. Exit codes: 0 done (even with errors counted), 1 runtime
// failure (or, for sweep, a failed records check; for soak, inexact
// accounting or a trend that is not flat), 2 bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/warcproxy/warcproxy/internal/bench"
	"github.com/warcproxy/warcproxy/internal/suggest"
)

// command is a warcbench command. The table commands returns dispatches
// them and lists them, in the usage and for an unknown one.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"origin", "serve synthetic bodies over HTTP and HTTPS (a load target)", origin},
		{"run", "make load, direct or through a proxy, and report URLs/s, MB/s, latency", runLoad},
		{"sweep", "start the proxy for each combination of settings, load it, check its WARCs", sweep},
		{"soak", "load one proxy for a long time with mixed and faulty traffic; check leaks and WARCs", soak},
		{"dedup", "fill dedup stores (Redis, bbolt) to millions of entries; report memory, lookup and save times", dedupBench},
	}
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprint(w, "Usage: warcbench COMMAND [flags]\n\nCommands:\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun warcbench COMMAND --help for the flags of a command.\n")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout, cmds)
		return 0
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
		names[i] = c.name
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if meant := suggest.Names(args[0], names); len(meant) > 0 {
		msg += " (did you mean " + strings.Join(meant, " or ") + "?)"
	}
	fmt.Fprintf(stderr, "warcbench: %s\n", msg)
	usage(stderr, cmds)
	return 2
}

// parse parses flags that may come before, between or after the
// positional arguments, and returns those. ok is false with the exit code
// to use: 0 for --help, after fs.Usage; 2 for a bad flag, explained as
// every command of ours explains one (did you mean --proxy?), with a
// pointer to --help instead of the whole usage.
func parse(fs *flag.FlagSet, args []string) (rest []string, code int, ok bool) {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package would print the usage after any error
	defer fs.SetOutput(out)
	for {
		if err := fs.Parse(args); err != nil {
			fs.SetOutput(out)
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, 0, false
			}
			fmt.Fprintf(out, "%s: %v\nRun %s --help for usage.\n", fs.Name(), suggest.FlagError(fs, args, err), fs.Name())
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
	http2 := fs.Bool("http2", false, "offer HTTP/2 (ALPN h2) on the HTTPS port, served by net/http; without it the origin speaks HTTP/1.1 only, as the proxy's upstream leg does")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: warcbench origin [--address A] [--port N] [--tls-port M [--http2]]

Serves, over HTTP (and HTTPS with --tls-port):
  /bytes/N              N bytes with Content-Length (N: 512, 16KB, 4MB, ...)
  /stream/CHUNK/COUNT   COUNT writes of CHUNK bytes, each flushed (chunked encoding)
  /delay/MS             a 3-byte body after MS milliseconds
  /status/CODE          that status code
  /reset/N              Content-Length N, half the body, then a TCP reset
  /stall/N/MS           N bytes of a 2N body, then MS ms of silence (N=0: before the head)
  /garbage/head         bytes that are no HTTP response
  /garbage/chunk        a chunked body whose second chunk size line is junk
  /drip/CHUNK/COUNT/MS  COUNT flushed writes of CHUNK bytes, MS ms apart
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
	if *http2 && *tlsPort < 0 {
		// Else the measurement meant for HTTP/2 runs over HTTP/1.1.
		fmt.Fprintln(stderr, "warcbench origin: --http2 needs --tls-port: HTTP/2 is offered over TLS only")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil)).With("component", "origin")
	srv, err := bench.ListenOrigin(bench.OriginConfig{Address: *address, Port: *port, TLSPort: *tlsPort, HTTP2: *http2}, logger)
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

// usageError returns a function that reports a bad flag of subcommand cmd
// and gives the exit code for it (2).
func usageError(stderr io.Writer, cmd string) func(format string, a ...any) int {
	return func(format string, a ...any) int {
		fmt.Fprintf(stderr, "warcbench "+cmd+": "+format+"\nRun warcbench "+cmd+" --help for usage.\n", a...)
		return 2
	}
}

// flagError is a bad flag or argument: exit code 2 and a pointer to
// --help, where any other error exits 1.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

func badFlag(format string, a ...any) error { return &flagError{fmt.Sprintf(format, a...)} }

// exitCode reports err of subcommand cmd on stderr and returns the exit
// code for it: 2 for a *flagError, else 1.
func exitCode(stderr io.Writer, cmd string, err error) int {
	var fe *flagError
	if errors.As(err, &fe) {
		return usageError(stderr, cmd)("%s", fe.msg)
	}
	fmt.Fprintf(stderr, "warcbench %s: %v\n", cmd, err)
	return 1
}
