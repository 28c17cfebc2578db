package upload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateDir is the folder under --dir where each shipped file leaves a
// small JSON state: where it went, its size and SHA-256, and whether its
// completion event was acknowledged. It outlives the local copy, so that
// a restart knows what was shipped and `warcproxy wacz` can say where.
const StateDir = ".uploaded"

// State is what is remembered of one shipped file.
type State struct {
	Kind    string    `json:"kind"` // warc, cdxj or crawllog
	Path    string    `json:"path"` // the local file shipped
	Key     string    `json:"key"`
	URL     string    `json:"url"`    // s3://bucket/key
	Target  string    `json:"target"` // --upload-to, s3://bucket/prefix/
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Shipped time.Time `json:"shipped"` // when the store confirmed it
	// EventSent is true once the completion event was acknowledged (or
	// when no webhook is set: there is none to send).
	EventSent bool `json:"event_sent"`
	// Event is the completion event, kept until it is acknowledged so a
	// restart can send it again after the file is gone.
	Event *Event `json:"event,omitempty"`
}

// statePath is where the state of the file whose key relative to the
// target's prefix is rel lives.
func statePath(dir, rel string) string {
	return filepath.Join(dir, StateDir, filepath.FromSlash(rel)+".json")
}

// readState returns the state at path, or ok false when there is none.
func readState(path string) (st State, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		// A state cut by a crash mid-write says nothing: ship again (the
		// store then finds the same object there, which counts as done).
		return State{}, false, nil
	}
	return st, true, nil
}

// writeState writes st at path through a temporary file, renamed once
// synced, so a crash leaves the old state or the new one.
func writeState(path string, st State) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing upload state: %w", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("writing upload state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state.*.tmp")
	if err != nil {
		return fmt.Errorf("writing upload state: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing upload state: %w", err)
	}
	return nil
}

// Shipped reads the states under dir's StateDir: what this --dir shipped
// away, for the commands that read --dir to say where it went.
func Shipped(dir string) ([]State, error) {
	root := filepath.Join(dir, StateDir)
	var states []State
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || filepath.Ext(path) != ".json" {
			return nil
		}
		if st, ok, err := readState(path); err == nil && ok {
			states = append(states, st)
		}
		return nil
	})
	return states, err
}
