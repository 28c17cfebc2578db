package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/warcproxy/warcproxy/cdxj"
	"github.com/warcproxy/warcproxy/crawllog"
	"github.com/warcproxy/warcproxy/upload"
	"github.com/warcproxy/warcproxy/writer"
)

// openShipper builds the shipper of --upload-to (nil without it). It
// does not reach the store: the command asked it at start, and the
// shipper retries it until it answers.
func (a *App) openShipper() error {
	if a.cfg.UploadTo == "" {
		return nil
	}
	target, err := upload.ParseTarget(a.cfg.UploadTo)
	if err != nil {
		return fmt.Errorf("--upload-to: %w", err)
	}
	ca, err := a.cfg.UploadCA()
	if err != nil {
		return fmt.Errorf("--upload-ca-file: %w", err)
	}
	store, err := upload.NewS3(context.Background(), upload.S3Options{
		Bucket: target.Bucket, Endpoint: a.cfg.UploadEndpoint, CAPEM: ca, PartSize: a.cfg.UploadPartSize,
	})
	if err != nil {
		return fmt.Errorf("--upload-to: %w", err)
	}
	o := upload.Options{
		Dir: a.cfg.Dir, Target: target, Store: store, Workers: a.cfg.UploadWorkers,
		KeepLocal: a.cfg.UploadKeepLocal, Logger: a.logger.With("component", "upload"),
		PrefixOf: func(path string) string { return writer.PrefixOf(a.cfg.WARCFilename, path) },
	}
	if a.cfg.UploadWebhook != "" {
		if o.Notifier, err = upload.NewNotifier(a.cfg.UploadWebhook); err != nil {
			return fmt.Errorf("--upload-webhook: %w", err)
		}
		a.notifier = o.Notifier
	}
	a.shipper = upload.New(o)
	return a.registry.Register(a.shipper.Collector())
}

// closedHandler is the writer's OnClose: a closed WARC goes to the CDXJ
// indexer, then to the shipper, whichever are on. With both on, the
// indexer hands each WARC on once its index is written.
func (a *App) closedHandler() func(string) {
	switch {
	case a.indexer != nil && a.shipper != nil:
		a.indexer.Then(a.shipWARC)
		return a.indexer.Add
	case a.indexer != nil:
		return a.indexer.Add
	case a.shipper != nil:
		return a.shipWARC
	}
	return nil
}

// shipWARC queues a closed WARC, with its CDXJ index under --cdxj.
func (a *App) shipWARC(path string) {
	u := upload.Unit{Path: path, Kind: upload.KindWARC, Recovered: a.recovered[path]}
	if a.cfg.CDXJ {
		if idx, err := cdxj.BesidePath(path); err == nil {
			u.With = []upload.Companion{{Path: idx, Kind: upload.KindCDXJ}}
		}
	}
	a.shipper.Add(u)
}

// queueClosed hands the closed files found at start to the next stage:
// with --upload-to, every closed WARC under --dir not yet shipped (the
// backlog of an earlier run goes first; one without its index under
// --cdxj is indexed first); otherwise, with --cdxj, the files recovery
// closed, to index them.
func (a *App) queueClosed(rep writer.RecoverReport) error {
	a.recovered = map[string]bool{}
	for _, f := range rep.Files {
		if f.NewPath != "" {
			a.recovered[f.NewPath] = true
		}
	}
	if a.shipper == nil {
		if a.indexer != nil {
			for path := range a.recovered {
				a.indexer.Add(path)
			}
		}
		return nil
	}
	pending, err := a.shipper.Pending()
	if err != nil {
		return fmt.Errorf("listing the files to ship in %s: %w", a.cfg.Dir, err)
	}
	for _, path := range pending {
		if strings.HasSuffix(path, ".log") {
			a.shipper.Add(upload.Unit{Path: path, Kind: upload.KindCrawlLog})
			continue
		}
		if a.indexer != nil && !indexed(path) {
			a.indexer.Add(path)
			continue
		}
		a.shipWARC(path)
	}
	logs, err := a.pendingCrawlLogs()
	if err != nil {
		return err
	}
	pending = append(pending, logs...)
	if len(pending) > 0 {
		files, bytes := a.shipper.Backlog()
		a.logger.Info("files left by an earlier run go first", "component", "upload", "warcs_and_logs", len(pending),
			"files", files, "bytes", bytes, "target", a.shipper.Target().String())
	}
	return nil
}

// indexed reports whether the CDXJ index of the WARC at path is there.
func indexed(path string) bool {
	idx, err := cdxj.BesidePath(path)
	if err != nil {
		return false
	}
	_, err = os.Stat(idx)
	return err == nil
}

// pendingCrawlLogs are the crawl logs an earlier run rotated and did not
// ship (the budget of its shutdown ended first).
func (a *App) pendingCrawlLogs() ([]string, error) {
	if a.cfg.CrawlLogDir == "" {
		return nil, nil
	}
	logs, err := crawllog.Rotated(a.cfg.CrawlLogDir)
	if err != nil {
		return nil, fmt.Errorf("listing the crawl logs to ship in %s: %w", a.cfg.CrawlLogDir, err)
	}
	return slices.DeleteFunc(logs, func(p string) bool { return a.shipper.Done(p, upload.KindCrawlLog) }), nil
}

// shipCrawlLogs, at shutdown once the crawl log is closed, rotates its
// files to closed names and queues them: they go under
// PREFIX/crawl-logs/, and the next run starts new files.
func (a *App) shipCrawlLogs() {
	if a.crawlLog == nil || a.shipper == nil {
		return
	}
	logs, err := a.crawlLog.Rotate(time.Now())
	if err != nil {
		a.logger.Error("rotating the crawl logs to ship them", "component", "upload", "err", err)
	}
	for _, p := range logs {
		a.shipper.Add(upload.Unit{Path: p, Kind: upload.KindCrawlLog})
	}
}
