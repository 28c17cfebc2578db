package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/warcproxy/warcproxy/cdxj"
)

// indexer writes the CDXJ index of each closed WARC file, one file at a
// time, off the writer goroutines.
type indexer struct {
	files  chan string
	done   chan struct{}
	logger *slog.Logger
}

func newIndexer(logger *slog.Logger) *indexer {
	ix := &indexer{files: make(chan string, 1024), done: make(chan struct{}), logger: logger}
	go func() {
		defer close(ix.done)
		for path := range ix.files {
			out, err := cdxj.WriteBeside(path)
			if err != nil {
				ix.logger.Error("writing the CDXJ index failed", "file", path, "err", err)
				continue
			}
			ix.logger.Debug("wrote CDXJ index", "file", out)
		}
	}()
	return ix
}

// close waits (until ctx ends) for the files queued so far to be indexed.
func (ix *indexer) close(ctx context.Context) error {
	close(ix.files)
	select {
	case <-ix.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("CDXJ indexing unfinished: %w", ctx.Err())
	}
}

// add queues a closed WARC file for indexing (the writer's OnClose).
func (ix *indexer) add(path string) { ix.files <- path }
