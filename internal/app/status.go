package app

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"time"
)

// statusHandler serves /status: one JSON object with warcprox's keys
// (tools written for warcprox read it) and ours, composed here from each
// component's part.
func (a *App) statusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(a.status())
	})
}

func (a *App) status() map[string]any {
	host, _ := os.Hostname()
	st := map[string]any{
		// warcprox's role, so that tools looking for a warcprox find it;
		// "software" says which.
		"role":        "warcprox",
		"software":    "warcproxy",
		"host":        host,
		"version":     a.version,
		"pid":         os.Getpid(),
		"start_time":  a.started.UTC().Format(time.RFC3339),
		"prefix":      a.cfg.Prefix,
		"rates_1min":  a.rates.Over(time.Minute),
		"rates_5min":  a.rates.Over(5 * time.Minute),
		"rates_15min": a.rates.Over(15 * time.Minute),
		// "direct", "socks ADDR" or "parent ADDR": never the credentials.
		"upstream_route": routeShown(a.cfg),
		"onion_route":    a.cfg.OnionTorSOCKSProxy,
	}
	maps.Copy(st, a.proxy.Status())
	maps.Copy(st, a.capture.Status())
	maps.Copy(st, a.ca.Status())
	maps.Copy(st, a.spooler.Status())
	a.writerStatus(st)
	if a.dedup != nil {
		st["dedup"] = a.dedup.Status()
	}
	if a.cdx != nil {
		st["cdxserver_dedup"] = a.cdx.Status()
	}
	if a.stats != nil {
		st["stats"] = a.stats.Status()
	}
	if a.shipper != nil {
		st["upload"] = a.shipper.Stats()
	}
	return st
}

// writerStatus is the writer pool's part of /status, with warcprox's keys
// where it has them.
func (a *App) writerStatus(st map[string]any) {
	ws := a.pool.Stats()
	st["queued_urls"] = ws.QueueLen
	st["queue_max_size"] = ws.QueueCap
	st["warc_bytes_written"] = ws.BytesWritten
	st["captures_written"] = ws.CapturesWritten
	st["records_written"] = ws.RecordsWritten
	st["warc_files_open"] = ws.FilesOpen
	st["warc_files_closed"] = ws.FilesClosed
	st["writer_errors"] = ws.WriteErrors
	st["writer_failing"] = !ws.FailingSince.IsZero()
	st["writer_failing_since"] = nil
	st["writer_failing_error"] = nil
	if !ws.FailingSince.IsZero() {
		st["writer_failing_since"] = ws.FailingSince.UTC().Format(time.RFC3339Nano)
		st["writer_failing_error"] = ws.FailingError
	}
	st["writer_last_error"] = nil
	st["writer_last_error_time"] = nil
	if ws.LastWriteError != nil {
		st["writer_last_error"] = ws.LastWriteError.Error()
		st["writer_last_error_time"] = ws.LastWriteErrorAt.UTC().Format(time.RFC3339Nano)
	}
	st["writer_workers"] = a.cfg.WriterWorkers
	st["warc_compression"] = a.cfg.Compression
	st["queue_full_for_seconds"] = a.pool.FullFor().Seconds()
	if ws.QueueCap > 0 {
		st["load"] = float64(ws.QueueLen) / float64(ws.QueueCap)
	}
	st["postfetch_chain"] = []map[string]any{{"processor": "WarcWriterProcessor", "queued_urls": ws.QueueLen}}
}
