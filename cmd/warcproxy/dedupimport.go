package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/dedupimport"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/suggest"
)

// defaultImportBucket is the bucket of requests that name no
// dedup-buckets (capture's unspecifiedDedupBucket, warcprox's name).
const defaultImportBucket = "__unspecified__"

const dedupImportUsage = `Usage: warcproxy dedup import --dedup-db SPEC [flags] FILE...

Seeds a dedup index from captures already archived, so that a crawl
started afterwards writes revisits of them instead of full copies. FILE is
a WARC (.warc, .warc.gz, .warc.zst), a WACZ (.wacz: the WARCs it holds are
read) or a CDXJ index (.cdxj, as --cdxj, warcio.js or pywb write it).

Every response record with a payload digest becomes an entry (record ID,
URL, date); revisit records are not originals and are skipped. An entry
that is in the index already is never replaced, so running an import twice
adds nothing the second time. A CDXJ line has no record ID: revisits of it
carry WARC-Refers-To-Target-URI and -Date but no WARC-Refers-To.

Flags:
      --dedup-db SPEC      The index, as the proxy's --dedup-db: embedded:PATH
                           or a redis:// or redis+cluster:// URL (required).
      --bucket NAME        The dedup bucket (default "__unspecified__", the
                           one of requests that name no dedup-buckets).
  -g, --digest-algorithm sha1|sha256
                           The proxy's digest algorithm (default "sha1"); a
                           WARC record with another digest is recomputed
                           from its payload, a CDXJ line is skipped.
      --base32             Digests in base32, as the proxy's --base32
                           (default true; --base32=false: hex).
  -h, --help               Print this help and exit.

Exit status: 0 done, 1 the import failed part way (an input not whole WARC
records, the index failing; what was added stays, and a second run adds the
rest), 2 bad arguments or an index in use, before anything is written.
`

// dedupCommand is `warcproxy dedup SUBCOMMAND`.
func dedupCommand(args []string, stdout, stderr io.Writer) int {
	subs := map[string]func(args []string, stdout, stderr io.Writer) int{
		"import":  dedupImportCommand,
		"migrate": dedupMigrateCommand,
	}
	names := []string{"import", "migrate"}
	if len(args) > 0 {
		if run, ok := subs[args[0]]; ok {
			return run(args[1:], stdout, stderr)
		}
	}
	switch {
	case len(args) == 0:
		fmt.Fprint(stderr, "warcproxy dedup: name a subcommand: import or migrate\nRun warcproxy dedup import --help or warcproxy dedup migrate --help for usage.\n")
	case args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		fmt.Fprint(stdout, "Usage: warcproxy dedup import --dedup-db SPEC [flags] FILE...\n"+
			"       warcproxy dedup migrate --dedup-db SPEC [flags]\n"+
			"Run warcproxy dedup import --help or warcproxy dedup migrate --help for their flags.\n")
		return 0
	default:
		hint := ""
		if meant := suggest.Names(args[0], names); len(meant) > 0 {
			hint = " (did you mean " + strings.Join(meant, " or ") + "?)"
		}
		fmt.Fprintf(stderr, "warcproxy dedup: unknown subcommand %q%s; the ones there are are import and migrate\n", args[0], hint)
	}
	return 2
}

// importArgs are the parsed flags of dedup import.
type importArgs struct {
	spec  store.Spec
	opts  dedupimport.Options
	paths []string
}

// dedupImportCommand is `warcproxy dedup import`: flags, the checks
// before anything is written, the summary and the exit code; the reading
// is package dedupimport's.
func dedupImportCommand(args []string, stdout, stderr io.Writer) int {
	a, err := parseImportFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, dedupImportUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup import: %v\nRun warcproxy dedup import --help for usage.\n", err)
		return 2
	}
	ins, err := dedupimport.CheckInputs(a.paths)
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup import: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, code := openImportStore(ctx, a.spec, stderr)
	if s == nil {
		return code
	}
	defer func() { _ = s.Close() }()
	if isTerminal(stderr) {
		a.opts.Progress = stderr
	}
	sum, err := dedupimport.Import(ctx, s, ins, a.opts)
	printImportSummary(stdout, sum, a.spec, a.opts.Bucket)
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup import: %v\n", err)
		return 1
	}
	return 0
}

// openImportStore opens the index, or says why not and the exit code.
func openImportStore(ctx context.Context, spec store.Spec, stderr io.Writer) (dedup.Store, int) {
	if err := store.CheckRefused(ctx, spec); err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup import: --dedup-db %v\n", err)
		return nil, 2
	}
	s, err := dedup.Open(spec, nil)
	switch {
	case errors.Is(err, store.ErrInUse):
		fmt.Fprintf(stderr, "warcproxy dedup import: --dedup-db %s: in use by another process (a running warcproxy?); "+
			"stop it first, or import into a Redis index that proxies share\n", spec.Raw)
		return nil, 2
	case err != nil:
		fmt.Fprintf(stderr, "warcproxy dedup import: --dedup-db %v\n", err)
		return nil, 2
	}
	return s, 0
}

func printImportSummary(w io.Writer, sum dedupimport.Summary, spec store.Spec, bucket string) {
	fmt.Fprintf(w, "dedup import into %s, bucket %q: %s, %s read, %d added, %d already there",
		spec.Raw, bucket, count(sum.Files, "file"), count(sum.Read, "record"), sum.Added, sum.Present)
	if sum.Recomputed > 0 {
		fmt.Fprintf(w, " (%d digests recomputed from the payload)", sum.Recomputed)
	}
	var skipped int64
	for _, n := range sum.Skipped {
		skipped += n
	}
	fmt.Fprintf(w, ", %d skipped\n", skipped)
	for _, r := range sum.SkippedReasons() {
		fmt.Fprintf(w, "  skipped %d: %s\n", sum.Skipped[r], r)
	}
}

// parseImportFlags parses the flags, which may come before, between or
// after the files (up to a "--").
func parseImportFlags(args []string) (importArgs, error) {
	var a importArgs
	fs := flag.NewFlagSet("warcproxy dedup import", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by the caller
	specText := fs.String("dedup-db", "", "")
	fs.StringVar(&a.opts.Bucket, "bucket", defaultImportBucket, "")
	alg := fs.String("digest-algorithm", string(digest.SHA1), "")
	fs.Var(fs.Lookup("digest-algorithm").Value, "g", "")
	fs.BoolVar(&a.opts.Base32, "base32", true, "")
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return a, suggest.FlagError(fs, args, err)
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			a.paths = append(a.paths, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		a.paths = append(a.paths, rest[0])
		args = rest[1:]
	}
	var err error
	if a.opts.Digest, err = digest.Parse(*alg); err != nil {
		return a, fmt.Errorf("--digest-algorithm: %w", err)
	}
	if *specText == "" {
		return a, errors.New("--dedup-db SPEC is required: the index to seed (embedded:PATH or a redis:// URL)")
	}
	if a.spec, err = store.Parse(*specText); err != nil {
		return a, fmt.Errorf("--dedup-db: %w", err)
	}
	if a.spec.Kind == store.None {
		return a, fmt.Errorf("--dedup-db %s: no index to import into", a.spec.Raw)
	}
	if len(a.paths) == 0 {
		return a, errors.New("no files given: name WARC, WACZ or CDXJ files")
	}
	return a, nil
}

// isTerminal tells whether w is a character device (a terminal), where
// progress is shown.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
