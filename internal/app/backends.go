package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/dedup"
	"github.com/warcproxy/warcproxy/internal/store"
	"github.com/warcproxy/warcproxy/stats"
)

// openBackends opens the dedup index (and CDX client), the stats tracker
// and the crawl log.
func (a *App) openBackends() error {
	cfg := a.cfg
	dspec, err := store.Parse(cfg.DedupDB)
	if err != nil {
		return fmt.Errorf("--dedup-db: %w", err)
	}
	sspec, err := store.Parse(cfg.StatsDB)
	if err != nil {
		return fmt.Errorf("--stats-db: %w", err)
	}
	ds, err := dedup.OpenLayout(dspec, &a.handles, dedup.Layout{
		ShardBits: cfg.DedupShardBits, NoURLTable: !cfg.DedupURLTable,
		Logger: a.logger.With("component", "dedup"),
	})
	if err != nil {
		return fmt.Errorf("--dedup-db: %w", err)
	}
	if ds != nil {
		if a.dedup, err = dedup.NewIndex(ds, dedup.Options{LookupTimeout: cfg.StoreTimeout}, a.logger.With("component", "dedup"), a.registry); err != nil {
			_ = ds.Close()
			return fmt.Errorf("dedup: %w", err)
		}
	}
	if cfg.CDXServerDedup != "" {
		a.cdx, err = dedup.NewCDX(cdxOptions(cfg, a.version), a.logger.With("component", "dedup", "backend", "cdx"), a.registry)
		if err != nil {
			return fmt.Errorf("--cdxserver-dedup: %w", err)
		}
	}
	ss, err := stats.Open(sspec, &a.handles)
	if err != nil {
		return fmt.Errorf("--stats-db: %w", err)
	}
	if a.stats, err = stats.NewTracker(ss, stats.Options{}, a.logger.With("component", "stats"), a.registry); err != nil {
		if ss != nil {
			_ = ss.Close()
		}
		return fmt.Errorf("stats: %w", err)
	}
	if cfg.CrawlLogDir != "" {
		host, _ := os.Hostname()
		if a.crawlLog, err = crawllog.New(cfg.CrawlLogDir, host, a.Addr().Port, a.logger.With("component", "crawllog"), a.registry); err != nil {
			return fmt.Errorf("crawl log: %w", err)
		}
	}
	cdxShown := ""
	if a.cdx != nil {
		cdxShown = a.cdx.URL()
	}
	a.logger.Info("databases", "dedup_db", dspec.Raw, "cdxserver_dedup", cdxShown, "stats_db", sspec.Raw, "crawl_log_dir", cfg.CrawlLogDir)
	return nil
}

// closeBackends flushes and closes what openBackends opened; ctx bounds
// the final flushes.
func (a *App) closeBackends(ctx context.Context) error {
	var errs []error
	if a.dedup != nil {
		if err := a.dedup.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing dedup index: %w", err))
		}
	}
	_ = a.cdx.Close() // cancels prefetches, releases idle connections; cannot fail
	if a.stats != nil {
		if err := a.stats.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing stats: %w", err))
		}
	}
	if a.crawlLog != nil {
		if err := a.crawlLog.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing crawl log: %w", err))
		}
	}
	return errors.Join(errs...)
}
