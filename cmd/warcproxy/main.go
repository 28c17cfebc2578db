// Command warcproxy is a forward HTTP/HTTPS proxy that records every
// exchange into WARC files. This file only wires: flags, components, run,
// exit code (1 runtime failure, 2 bad flags or config). `warcproxy
// healthcheck [URL]` (healthcheck.go) is the one subcommand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oklog/run"

	"github.com/warcproxy/warcproxy/internal/app"
	"github.com/warcproxy/warcproxy/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheckCommand(args[1:], os.Stderr)
	}
	cfg, err := config.Parse(args, os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && !cfg.ShowVersion {
		err = cfg.CheckFiles()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warcproxy: %v\nRun warcproxy --help for usage.\n", err)
		return 2
	}
	if cfg.ShowVersion {
		fmt.Println("warcproxy", version)
		return 0
	}
	logger := newLogger(cfg)
	a, err := app.New(cfg, version, logger)
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}

	var g run.Group
	// Signals: the first starts a graceful shutdown; a second one forces it.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	stopSignals := make(chan struct{})
	g.Add(func() error {
		select {
		case sig := <-sigs:
			logger.Info("signal received, shutting down (send it again to force)", "signal", sig.String())
		case <-stopSignals:
		}
		return nil
	}, func(error) { close(stopSignals) })

	serveErr := make(chan error, 1)
	var shutdownErr error
	g.Add(func() error {
		err := a.Serve()
		serveErr <- err
		return err
	}, func(error) {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		drainCtx, cancelDrain := context.WithCancel(context.Background())
		defer cancelDrain()
		go func() {
			select {
			case sig := <-sigs:
				logger.Warn("second signal: forcing shutdown", "signal", sig.String())
				cancel()
				cancelDrain()
				// Whatever happens, exit soon; only whole records are on disk.
				time.AfterFunc(5*time.Second, func() { os.Exit(1) })
			case <-drainCtx.Done():
			}
		}()
		if shutdownErr = a.Shutdown(ctx, drainCtx); shutdownErr != nil {
			logger.Error("shutdown incomplete", "err", shutdownErr)
		}
	})
	if err := g.Run(); err != nil {
		logger.Error("proxy failed", "err", err)
		return 1
	}
	if err := <-serveErr; err != nil || shutdownErr != nil {
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
