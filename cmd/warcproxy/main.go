// Command warcproxy is a forward HTTP/HTTPS proxy that records every
// exchange into WARC files. This file only wires: flags, components, run,
// exit code (1 runtime failure, 2 bad flags or config). The subcommands,
// `warcproxy healthcheck [URL]` (healthcheck.go) and `warcproxy wacz`
// (wacz.go), are dispatched from the table in commands.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/warcproxy/warcproxy/internal/app"
	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	cmds := commands()
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return runCommand(cmds, args, os.Stdout, os.Stderr)
	}
	cfg, err := config.Parse(args, nil)
	if errors.Is(err, flag.ErrHelp) {
		usage(os.Stdout, cmds)
		return 0
	}
	var logger *slog.Logger
	if err == nil && !cfg.ShowVersion {
		logger = newLogger(cfg)
		// Checking the stores dials Redis, whose client logs on its own:
		// through our log, in the format asked for, from the start.
		store.RouteRedisLogs(logger.With("component", "redis"))
		err = errors.Join(cfg.CheckFiles(), checkStores(context.Background(), cfg))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warcproxy: %v\nRun warcproxy --help for usage.\n", err)
		return 2
	}
	if cfg.ShowVersion {
		fmt.Println("warcproxy", version)
		return 0
	}
	// Capture bytes wait in the heap, up to --spool-memory, and Go lets
	// the heap grow to twice what is live before it collects (GOGC=100):
	// at 256 KB c50 that was about 100 MB of RSS. Collecting at 1.5 times
	// keeps it near 80 MB for 1-2% of CPU. GOGC or GOMEMLIMIT in the
	// environment leave the collector to Go.
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(50)
	}
	a, err := app.New(cfg, version, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}

	// The first signal stops the proxy gracefully, within
	// --shutdown-timeout; a second one ends that budget at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stop, force := make(chan struct{}), make(chan struct{})
	go func() {
		sig := <-sigs
		logger.Info("signal received, shutting down (send it again to force)", "signal", sig.String())
		close(stop)
		sig = <-sigs
		logger.Warn("second signal: forcing shutdown; files keep whole records only", "signal", sig.String())
		close(force)
	}()
	defer watchHangups(logger, a.ReloadJobs)()
	if err := a.Run(stop, force); err != nil {
		return 1 // scripts must see that captures may be missing
	}
	return 0
}

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(h)
}

// watchHangups makes SIGHUP reload the --jobs file (reload logs what it
// did, and why it failed) instead of ending the proxy, as SIGHUP would by
// default: an operator (or systemd's ExecReload, or a closed terminal)
// sending it must not stop a crawl. The returned func stops the watch.
func watchHangups(logger *slog.Logger, reload func() error) (stop func()) {
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hups:
				logger.Debug("SIGHUP received: reloading")
				_ = reload()
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hups); close(done) }
}
