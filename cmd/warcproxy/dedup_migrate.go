package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/internal/suggest"
)

const dedupMigrateUsage = `Usage: warcproxy dedup migrate --dedup-db SPEC [flags]

Converts every entry a dedup index holds in the layout of earlier releases
(one JSON value per entry) to the compact layout, removes the old entry, and
marks the index migrated, after which proxies started from then on look up
the compact layout only. An entry the compact layout already has a newer one
for is only removed. Run it again at any time: it converts what is left.
Stop proxies of earlier releases first: their saves would go where a
migrated index no longer looks. Proxies of this release may keep running.

Flags:
      --dedup-db SPEC        The index: embedded:PATH, redis://host:port/db
                             [?prefix=name:] or redis+cluster://host:port,...
                             (required). An embedded file a running proxy
                             holds is refused: stop the proxy first.
      --dedup-url-table      Redis: write each original's URL to the URL
                             table, as proxies with --dedup-url-table do.
                             (default true)
      --dedup-shard-bits N   Redis: shard bits, if the index has no layout
                             marker yet. (default 20)
  -h, --help                 Print this help and exit.

Progress is shown on a terminal; a summary is printed at the end.
Exit status: 0 done, 1 the migration failed (it can be run again),
2 bad arguments or an embedded file in use, before anything is written.
`

// dedupMigrateCommand is `warcproxy dedup migrate`: flags, progress and
// exit code; the conversion is package dedup's.
func dedupMigrateCommand(args []string, stdout, stderr io.Writer) int {
	spec, layout, err := parseMigrateFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, dedupMigrateUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup migrate: %v\nRun warcproxy dedup migrate --help for usage.\n", err)
		return 2
	}
	s, err := dedup.OpenLayout(spec, nil, layout)
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup migrate: --dedup-db: %v\n", err)
		if errors.Is(err, store.ErrInUse) {
			return 2 // as dedup import: stop the proxy first
		}
		return 1
	}
	defer s.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := newMigrateProgress(stderr)
	st, err := dedup.Migrate(ctx, s, p.show)
	p.done()
	if err != nil {
		fmt.Fprintf(stderr, "warcproxy dedup migrate: %v (after %d entries; run it again to go on)\n", err, st.Read)
		return 1
	}
	fmt.Fprintf(stdout, "migrated %s: %d old entries read, %d converted, %d already newer in the compact layout, "+
		"%d kept in the old layout (a digest that does not decode, or too big for a Redis hash), %d unreadable; the index is marked migrated\n",
		spec.Raw, st.Read, st.Converted, st.Superseded, st.Kept, st.Unreadable)
	return 0
}

func parseMigrateFlags(args []string) (store.Spec, dedup.Layout, error) {
	fs := flag.NewFlagSet("warcproxy dedup migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed once, by the caller
	db := fs.String("dedup-db", "", "")
	urlTable := fs.Bool("dedup-url-table", true, "")
	bits := fs.Int("dedup-shard-bits", dedup.DefaultShardBits, "")
	if err := fs.Parse(args); err != nil {
		return store.Spec{}, dedup.Layout{}, suggest.FlagError(fs, args, err)
	}
	if fs.NArg() > 0 {
		return store.Spec{}, dedup.Layout{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *db == "" {
		return store.Spec{}, dedup.Layout{}, errors.New("--dedup-db SPEC is required")
	}
	spec, err := store.Parse(*db)
	if err != nil {
		return store.Spec{}, dedup.Layout{}, fmt.Errorf("--dedup-db: %w", err)
	}
	switch spec.Kind {
	case store.None:
		return store.Spec{}, dedup.Layout{}, fmt.Errorf("--dedup-db %q: no index to migrate", *db)
	case store.Embedded:
		if _, err := os.Stat(spec.Path); err != nil {
			return store.Spec{}, dedup.Layout{}, fmt.Errorf("--dedup-db: %w", err)
		}
	}
	if *bits < 1 || *bits > dedup.MaxShardBits {
		return store.Spec{}, dedup.Layout{}, fmt.Errorf("--dedup-shard-bits: want 1 to %d, got %d", dedup.MaxShardBits, *bits)
	}
	return spec, dedup.Layout{ShardBits: *bits, NoURLTable: !*urlTable}, nil
}

// migrateProgress shows the counts on a terminal, at most once a second.
type migrateProgress struct {
	w     io.Writer
	tty   bool
	last  time.Time
	shown bool
}

func newMigrateProgress(w io.Writer) *migrateProgress {
	p := &migrateProgress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *migrateProgress) show(st dedup.MigrateStats) {
	if !p.tty || time.Since(p.last) < time.Second {
		return
	}
	p.last, p.shown = time.Now(), true
	fmt.Fprintf(p.w, "\rmigrating: %d read, %d converted", st.Read, st.Converted+st.Superseded)
}

func (p *migrateProgress) done() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}
