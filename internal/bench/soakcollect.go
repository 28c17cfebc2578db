package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// warcCollector reads the soak's WARC files into the accounting as the
// proxy closes them, and deletes each once read (unless keep), so that the
// disk a soak uses stays flat however long it runs: at 20 clients the
// mixed load writes over 100 MB/s.
type warcCollector struct {
	dir  string
	keep bool

	mu       sync.Mutex
	captures map[uint64][]soakCapture
	unknown  int64
	read     map[string]bool // kept files already read
	files    int64
	bytes    int64
}

func newWARCCollector(dir string, keep bool) *warcCollector {
	return &warcCollector{dir: dir, keep: keep, captures: map[uint64][]soakCapture{}, read: map[string]bool{}}
}

// run collects every interval until ctx ends.
func (c *warcCollector) run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := c.collect(false); err != nil {
				return err
			}
		}
	}
}

// collect reads the closed WARC files not read yet; final (after the proxy
// exited) also says a file still open is an error.
func (c *warcCollector) collect(final bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !isWARCName(name) || c.read[name] {
			continue
		}
		path := filepath.Join(c.dir, name)
		if strings.HasSuffix(name, ".open") {
			if final {
				return fmt.Errorf("%s: still open after the proxy exited", path)
			}
			continue
		}
		if err := c.readFile(path); err != nil {
			return err
		}
	}
	return nil
}

func (c *warcCollector) readFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	n, err := readSoakFile(path, c.captures)
	if err != nil {
		return err
	}
	c.unknown += n
	c.files++
	c.bytes += fi.Size()
	if c.keep {
		c.read[filepath.Base(path)] = true
		return nil
	}
	return os.Remove(path)
}

// collectPath reads one closed WARC file (one the store confirmed) into
// the accounting.
func (c *warcCollector) collectPath(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readFile(path)
}
