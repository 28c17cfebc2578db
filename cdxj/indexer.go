package cdxj

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Indexer writes the CDXJ index of each closed WARC file beside it
// (--cdxj), one file at a time, off the writer goroutines: the pipeline's
// last stage. Files queue without bound (a restart may recover many at
// once); the queue holds names only.
type Indexer struct {
	logger *slog.Logger
	then   func(warc string) // the next stage, or nil

	mu     sync.Mutex
	queue  []string
	closed bool
	wake   chan struct{} // a token when the queue grew or closed
}

// NewIndexer returns an Indexer; Run works through its queue.
func NewIndexer(logger *slog.Logger) *Indexer {
	return &Indexer{logger: logger, wake: make(chan struct{}, 1)}
}

// Then hands each WARC file to next once its index is written (or
// failed: next finds no index beside it), before Run starts: the shipper
// takes a WARC with its index.
func (ix *Indexer) Then(next func(warc string)) { ix.then = next }

// Add queues a closed WARC file (the writer's OnClose).
func (ix *Indexer) Add(path string) {
	ix.mu.Lock()
	ix.queue = append(ix.queue, path)
	ix.mu.Unlock()
	ix.signal()
}

// Close says no more files come: Run returns once the queue is empty.
func (ix *Indexer) Close() {
	ix.mu.Lock()
	ix.closed = true
	ix.mu.Unlock()
	ix.signal()
}

func (ix *Indexer) signal() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// next takes the next file; ok is false once closed and empty.
func (ix *Indexer) next() (path string, ok, closed bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.queue) == 0 {
		return "", false, ix.closed
	}
	path, ix.queue = ix.queue[0], ix.queue[1:]
	return path, true, false
}

// Run indexes queued files until Close and an empty queue. When hard
// ends first (the shutdown budget is spent), it stops indexing but waits
// for Close (the writer closes its files, even cut short, and queues
// them), so that every file left without an index is counted in the error
// (index those later with a CDXJ indexer such as warcio.js's cdx-index).
func (ix *Indexer) Run(hard context.Context) error {
	for hard.Err() == nil {
		path, ok, closed := ix.next()
		switch {
		case closed:
			return nil
		case ok:
			ix.index(path)
			continue
		}
		select {
		case <-ix.wake:
		case <-hard.Done():
		}
	}
	for !ix.isClosed() {
		<-ix.wake
	}
	if left := ix.indexSmall(); left > 0 {
		return fmt.Errorf("indexing cut (%v): %d files not indexed", context.Cause(hard), left)
	}
	return nil
}

// afterCutBudget is how many bytes of WARC files are still indexed once
// the shutdown is forced: the files the writer closed then are often small
// (the open file of an idle proxy, when two signals came at once), and
// indexing a few megabytes takes milliseconds, not the second a forced
// stop may take.
var afterCutBudget int64 = 64 << 20

// indexSmall indexes the queued files while they fit in afterCutBudget,
// and returns how many are left without an index.
func (ix *Indexer) indexSmall() (left int) {
	ix.mu.Lock()
	queue := ix.queue
	ix.queue = nil
	ix.mu.Unlock()
	budget := afterCutBudget
	for _, path := range queue {
		fi, err := os.Stat(path)
		if err != nil || fi.Size() > budget {
			left++
			continue
		}
		budget -= fi.Size()
		ix.index(path)
	}
	return left
}

func (ix *Indexer) isClosed() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.closed
}

func (ix *Indexer) index(path string) {
	if ix.then != nil {
		defer ix.then(path)
	}
	out, err := WriteBeside(path)
	if err != nil {
		ix.logger.Error("writing the CDXJ index failed", "file", path, "err", err)
		return
	}
	ix.logger.Debug("wrote CDXJ index", "file", out)
}
