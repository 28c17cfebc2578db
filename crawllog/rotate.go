package crawllog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Rotate, after Close, renames each of this logger's files in its
// directory ("{prefix}-{shorthostname}-{port}.log") to a closed name
// with the time of the rotation, "{prefix}-{shorthostname}-{port}-
// {timestamp17}.log", and returns the new paths: a file shipped away is
// then never appended to again, and the next run starts a new one. A
// file from an earlier run that ended without rotating (a crash) is
// rotated with this run's.
func (l *Logger) Rotate(now time.Time) ([]string, error) {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if !closed {
		return nil, errors.New("rotating crawl logs before Close")
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("rotating crawl logs: %w", err)
	}
	stamp := now.UTC().Format("20060102150405.000")
	stamp = strings.Replace(stamp, ".", "", 1)
	var rotated []string
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(name, l.suffix) || strings.HasPrefix(name, ".") {
			continue
		}
		to := filepath.Join(l.dir, strings.TrimSuffix(name, ".log")+"-"+stamp+".log")
		if err := os.Rename(filepath.Join(l.dir, name), to); err != nil {
			errs = append(errs, fmt.Errorf("rotating crawl log %s: %w", name, err))
			continue
		}
		rotated = append(rotated, to)
	}
	sort.Strings(rotated)
	return rotated, errors.Join(errs...)
}

// rotatedName is a name Rotate gives: ...-{17 digits}.log.
var rotatedName = regexp.MustCompile(`^[^.].*-\d{17}\.log$`)

// Rotated lists the rotated crawl logs in dir (of any host and port), in
// name order: those an earlier run left to ship.
func Rotated(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if e.Type().IsRegular() && rotatedName.MatchString(e.Name()) {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}
