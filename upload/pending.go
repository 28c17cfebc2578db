package upload

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/warcproxy/warcproxy/internal/warcscan"
)

// Pending lists the closed WARC files under --dir that are still to ship,
// oldest first: every one without a state that says it was shipped, and
// with KeepLocal off also those shipped but not yet removed (a crash came
// between the two). Open files (.open) are the writer's; a file written
// under its final name and still locked is skipped when it is shipped.
func (s *Shipper) Pending() ([]string, error) {
	type file struct {
		path string
		mod  int64
	}
	var files []file
	err := filepath.WalkDir(s.opts.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != s.opts.Dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // StateDir, and whatever else hides there
			}
			return nil
		}
		if !d.Type().IsRegular() || !IsClosedWARC(d.Name()) || s.Done(path, KindWARC) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone since it was listed
		}
		files = append(files, file{path, fi.ModTime().UnixNano()})
		return nil
	})
	sort.SliceStable(files, func(i, j int) bool { return files[i].mod < files[j].mod })
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.path
	}
	return paths, err
}

// Done reports whether the file at path has nothing left to do: shipped,
// and kept here on purpose (KeepLocal). A file shipped but still here
// without KeepLocal is not done: a crash came before it was removed.
func (s *Shipper) Done(path, kind string) bool {
	if !s.opts.KeepLocal {
		return false
	}
	_, rel := s.key(path, kind)
	st, ok, _ := readState(statePath(s.opts.Dir, rel))
	if !ok {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Size() == st.Size
}

// IsClosedWARC tells a closed WARC file's name: .warc, .warc.gz or
// .warc.zst, not hidden.
func IsClosedWARC(name string) bool {
	return !strings.HasPrefix(name, ".") && warcscan.ForName(name) != nil
}
