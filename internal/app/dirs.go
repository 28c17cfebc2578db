package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// parentMode is the mode of a directory made on the way to a named one
// (--tmp-dir a/b/spool makes a and a/b): it holds only that directory,
// whose own mode (0700 for the spool, certs and CA) guards what is in it,
// so the parents are 0755, as mkdir -p makes them.
const parentMode fs.FileMode = 0o755

// madeDirs records the directories this run created, so that shutdown
// removes those and only those: a directory the operator made (an empty
// --tmp-dir named in systemd's ReadWritePaths=, whose absence fails the
// unit's next start) is never removed.
type madeDirs struct {
	paths []string // in the order made: a parent before its children
}

// mkdirAll is os.MkdirAll recording what it makes: path gets mode, the
// missing parents parentMode. A directory that exists, or that another
// process makes meanwhile, is not recorded.
func (m *madeDirs) mkdirAll(path string, mode fs.FileMode) error {
	missing, err := missingDirs(filepath.Clean(path))
	if err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		perm := parentMode
		if i == 0 {
			perm = mode
		}
		err := os.Mkdir(missing[i], perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		m.paths = append(m.paths, missing[i])
	}
	return nil
}

// missingDirs lists path and its parents that do not exist, deepest
// first; it fails when the nearest that exists is not a directory.
func missingDirs(path string) ([]string, error) {
	var missing []string
	for dir := path; ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		switch {
		case err == nil && st.IsDir():
			return missing, nil
		case err == nil:
			return nil, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("checking %s: %w", dir, err)
		}
		missing = append(missing, dir)
		if filepath.Dir(dir) == dir {
			return missing, nil
		}
	}
}

// removeEmpty removes the directories recorded, deepest first, those that
// are empty only: one that holds a WARC file, a database or a
// certificate stays.
func (m *madeDirs) removeEmpty() {
	for i := len(m.paths) - 1; i >= 0; i-- {
		_ = os.Remove(m.paths[i]) // fails, as it should, on a directory not empty
	}
	m.paths = nil
}

// removeDirs removes, when empty, the directories this run made and the
// default spool (DIR/.spool, the proxy's own even when an earlier run
// left it: spill files are unlinked at creation, so it is empty once
// every capture is done). A --tmp-dir that existed is left.
func (a *App) removeDirs() {
	if a.cfg.TmpDir == "" && a.spoolDir != "" {
		_ = os.Remove(a.spoolDir)
	}
	a.dirs.removeEmpty()
}
