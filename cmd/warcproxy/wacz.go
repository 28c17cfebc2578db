package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/warcproxy/warcproxy/internal/suggest"
	"github.com/warcproxy/warcproxy/wacz"
)

const waczUsage = `Usage: warcproxy wacz --output FILE.wacz [flags] WARC...

Packs WARC files (.warc.gz or .warc) into a WACZ %s file that ReplayWeb.page
opens: the WARCs stored as they are, their sorted CDXJ index, the HTML pages,
and datapackage.json with the SHA-256 and size of every file.

Flags:
  -o, --output FILE.wacz   The package to write (required).
      --title TEXT         Title in datapackage.json (default: FILE).
      --pages-from html|none
                           html lists every HTML response with status 200 to
                           a GET as a page, with its <title> (and a revisit of
                           one at another URL, untitled); none writes no
                           pages.
                           (default "html")
      --compressed-index   Write indexes/index.cdx.gz and index.idx (blocks of
                           3000 lines, each its own gzip member) instead of
                           index.cdxj, for collections too large to index whole.
      --force              Replace FILE.wacz if it exists.
  -h, --help               Print this help and exit.

.warc.zst files are refused: no WACZ reader reads zstd yet.
Exit status: 0 done, 1 packing failed (an input turned out not to be whole
WARC records, a write failed), 2 bad arguments (a missing or non-WARC input,
an existing FILE.wacz without --force). Nothing is left behind on failure.
`

// waczCommand is `warcproxy wacz`: flags and exit code only; the packing
// is package wacz's.
func waczCommand(args []string, stdout, stderr io.Writer) int {
	opts, paths, err := parseWACZFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, waczUsage, wacz.Version)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy wacz: %v\nRun warcproxy wacz --help for usage.\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sum, err := wacz.Pack(ctx, paths, opts)
	var argErr *wacz.ArgError
	switch {
	case errors.As(err, &argErr):
		fmt.Fprintf(stderr, "warcproxy wacz: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "warcproxy wacz: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %s, %s, %s\n", opts.Output, count(sum.WARCs, "WARC file"),
		count(sum.IndexLines, "index line"), count(sum.Pages, "page"), count(sum.Bytes, "byte"))
	return 0
}

// count is "1 page" or "2 pages".
func count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// parseWACZFlags parses the flags, which may come before, between or after
// the WARC files (up to a "--").
func parseWACZFlags(args []string) (wacz.Options, []string, error) {
	opts := wacz.Options{Software: "warcproxy " + version}
	fs := flag.NewFlagSet("warcproxy wacz", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by the caller
	fs.StringVar(&opts.Output, "output", "", "")
	fs.Var(fs.Lookup("output").Value, "o", "") // one flag: -ox.wacz is explained as --output
	fs.StringVar(&opts.Title, "title", "", "")
	pagesFrom := fs.String("pages-from", "html", "")
	fs.BoolVar(&opts.CompressedIndex, "compressed-index", false, "")
	fs.BoolVar(&opts.Force, "force", false, "")
	var paths []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return opts, nil, suggest.FlagError(fs, args, err)
		}
		rest := fs.Args()
		// Parse stops at the first argument that is not a flag, or just
		// after a "--", which ends the flags.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			paths = append(paths, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		paths = append(paths, rest[0])
		args = rest[1:]
	}
	switch *pagesFrom {
	case "html":
		opts.Pages = wacz.PagesFromHTML
	case "none":
		opts.Pages = wacz.PagesNone
	default:
		return opts, nil, fmt.Errorf("--pages-from %q: want html or none", *pagesFrom)
	}
	if opts.Output == "" {
		return opts, nil, errors.New("--output FILE.wacz is required")
	}
	if len(paths) == 0 {
		return opts, nil, errors.New("no WARC files given")
	}
	return opts, paths, nil
}
