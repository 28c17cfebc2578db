// Package app assembles warcproxy from its configuration: CA, spooler,
// writer pool and proxy server. cmd/warcproxy and the tests share it, so the
// tests run the same wiring that users do.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/warcproxy/warcproxy/internal/config"
	"github.com/warcproxy/warcproxy/internal/digest"
	"github.com/warcproxy/warcproxy/internal/spool"
	"github.com/warcproxy/warcproxy/proxy"
	"github.com/warcproxy/warcproxy/writer"
)

// App is a configured, not yet started warcproxy.
type App struct {
	cfg    config.Config
	logger *slog.Logger
	ln     net.Listener
	CA     *proxy.CA
	Pool   *writer.Pool // nil with --prefix -
	Proxy  *proxy.Server

	spoolDir string
}

// New builds every component and binds the listening socket, so that
// errors (port in use, unreadable CA) surface before anything runs.
func New(cfg config.Config, version string, logger *slog.Logger) (*App, error) {
	alg, err := digest.Parse(cfg.DigestAlgorithm)
	if err != nil {
		return nil, err
	}
	ca, err := proxy.LoadOrCreateCA(cfg.CACert, cfg.CertsDir, logger.With("component", "ca"))
	if err != nil {
		return nil, err
	}
	// The WARC directory is readable by ingest jobs of other users; the
	// spool inside it is the proxy's alone.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating WARC dir: %w", err)
	}
	tmpDir := cfg.TmpDir
	if tmpDir == "" {
		tmpDir = filepath.Join(cfg.Dir, ".spool")
	}
	sp, err := spool.New(tmpDir, cfg.TmpFileMaxMemory, cfg.SpoolMemory)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port

	a := &App{cfg: cfg, logger: logger, ln: ln, CA: ca, spoolDir: tmpDir}
	var queue proxy.Queue
	if cfg.Prefix != "-" {
		a.Pool, err = writer.New(writer.Options{
			Dir:              cfg.Dir,
			Prefix:           cfg.Prefix,
			FilenameTemplate: cfg.WARCFilename,
			Gzip:             cfg.Gzip,
			GzipLevel:        cfg.GzipLevel,
			WARCVersion:      cfg.WARCVersion,
			Digest:           alg,
			Base32:           cfg.Base32,
			Workers:          cfg.WriterWorkers,
			QueueSize:        cfg.QueueSize,
			RolloverSize:     cfg.RolloverSize,
			RolloverIdle:     cfg.RolloverIdleTime,
			Software:         "warcproxy/" + version,
			Port:             port,
		}, logger.With("component", "writer"))
		if err != nil {
			ln.Close()
			return nil, err
		}
		queue = a.Pool
	}
	a.Proxy, err = proxy.New(proxy.Options{
		CA:                ca,
		Spooler:           sp,
		Queue:             queue,
		Prefix:            cfg.Prefix,
		Digest:            alg,
		Base32:            cfg.Base32,
		MaxConns:          cfg.MaxConns,
		ConnWaitTimeout:   cfg.ConnWaitTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		HeaderTimeout:     cfg.HeaderTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		QueueFullTimeout:  cfg.QueueFullTimeout,
		MaxResourceSize:   cfg.MaxResourceSize,
		SocketTimeout:     cfg.SocketTimeout,
		MethodFilter:      cfg.MethodFilter,
		VerifyUpstreamTLS: cfg.VerifyUpstreamTLS,
		Version:           version,
		Status:            a.status,
	}, logger.With("component", "proxy"))
	if err != nil {
		_ = a.closePool(context.Background())
		ln.Close()
		return nil, err
	}
	return a, nil
}

// Addr is the bound proxy address.
func (a *App) Addr() *net.TCPAddr { return a.ln.Addr().(*net.TCPAddr) }

// CACertFile is the client copy of the CA certificate.
func (a *App) CACertFile() string { return proxy.CertOnlyPath(a.cfg.CACert) }

// Serve runs the proxy until Shutdown; it returns nil after a shutdown.
func (a *App) Serve() error {
	a.logger.Info("warcproxy listening",
		"address", a.cfg.Address, "port", a.Addr().Port, "dir", a.cfg.Dir,
		"prefix", a.cfg.Prefix, "ca_cert", a.CACertFile(),
		"writer_workers", a.cfg.WriterWorkers, "max_conns", a.cfg.MaxConns, "pid", os.Getpid())
	err := a.Proxy.Serve(a.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for in-flight exchanges (until ctx ends),
// then drains the writer queue and closes every WARC file. drainCtx bounds
// the drain; a second signal cancels it.
func (a *App) Shutdown(ctx, drainCtx context.Context) error {
	a.logger.Info("shutting down: finishing in-flight exchanges")
	errProxy := a.Proxy.Shutdown(ctx)
	if errProxy != nil {
		a.logger.Warn("in-flight exchanges cut short", "err", errProxy)
	}
	errPool := a.closePool(drainCtx)
	_ = os.Remove(a.spoolDir) // only if empty: spill files are unlinked at creation
	if errPool == nil {
		a.logger.Info("shutdown complete: writer queue drained, WARC files closed")
	}
	return errors.Join(errProxy, errPool)
}

func (a *App) closePool(ctx context.Context) error {
	if a.Pool == nil {
		return nil
	}
	return a.Pool.Close(ctx)
}

func (a *App) status(st map[string]any) {
	if a.Pool == nil {
		st["queued_urls"] = 0
		st["queue_max_size"] = 0
		st["warc_bytes_written"] = int64(0)
		return
	}
	ws := a.Pool.Stats()
	st["queued_urls"] = ws.QueueLen
	st["queue_max_size"] = ws.QueueCap
	st["warc_bytes_written"] = ws.BytesWritten
	st["captures_written"] = ws.CapturesWritten
	st["records_written"] = ws.RecordsWritten
	st["warc_files_open"] = ws.FilesOpen
	st["warc_files_closed"] = ws.FilesClosed
	st["writer_errors"] = ws.WriteErrors
	st["writer_workers"] = a.cfg.WriterWorkers
}
