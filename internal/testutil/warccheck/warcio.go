package warccheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// nodeTimeout bounds one run of verify.mjs.
const nodeTimeout = 10 * time.Minute

// warcioRecord and warcioFile mirror verify.mjs's JSON output.
type warcioRecord struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	TargetURI string `json:"targetURI"`
	Offset    int64  `json:"offset"`
	Length    int64  `json:"length"`
}

type warcioFile struct {
	Path       string         `json:"path"`
	Compressed bool           `json:"compressed"`
	Members    *int           `json:"members"`
	Records    []warcioRecord `json:"records"`
	Problems   []string       `json:"problems"`
}

type warcioReport struct {
	Warcio string       `json:"warcio"`
	Node   string       `json:"node"`
	Files  []warcioFile `json:"files"`
}

// skipHint is how to make the warcio.js check run.
const skipHint = "run `npm ci --prefix internal/testutil/warcio`"

// warcioDir locates internal/testutil/warcio: next to this package's source
// when the binary knows where that is, else found from the working
// directory (a test runs in its package's directory, inside the module).
func warcioDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "warcio")
		if _, err := os.Stat(filepath.Join(dir, "verify.mjs")); err == nil {
			return filepath.Clean(dir), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "internal", "testutil", "warcio")
			if _, err := os.Stat(filepath.Join(dir, "verify.mjs")); err != nil {
				return "", fmt.Errorf("verify.mjs not found under %s", d)
			}
			return dir, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// warcioCommand returns the command that runs verify.mjs, or the reason it
// cannot run.
func warcioCommand() (node, script string, err error) {
	dir, err := warcioDir()
	if err != nil {
		return "", "", fmt.Errorf("locating internal/testutil/warcio: %w", err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node not found in PATH: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err != nil {
		return "", "", fmt.Errorf("warcio.js is not installed in %s", filepath.Join(dir, "node_modules"))
	}
	return node, filepath.Join(dir, "verify.mjs"), nil
}

// checkWarcio runs verify.mjs over paths and reports its problems to r. It
// returns what warcio.js read, by path, and whether it ran at all: without
// node or warcio.js it logs that the check was skipped, or fails when
// CI=true. With allowOpen false a name ending in .open is a problem.
// readAs names, for some paths, the file to read instead (a .warc.zst
// file decompressed by the zstd command: warcio.js does not read zstd).
func checkWarcio(r *reporter, paths []string, allowOpen bool, readAs map[string]string) (map[string]warcioFile, bool) {
	r.t.Helper()
	if len(paths) == 0 {
		return map[string]warcioFile{}, true // nothing to read: an empty directory is fine
	}
	node, script, err := warcioCommand()
	if err != nil {
		if envCI() {
			r.n++
			r.t.Fatalf("%s: cannot run the warcio.js check with CI=true: %v; %s (.ci/run does)", r.prefix, err, skipHint)
		}
		r.t.Logf("warcio.js check skipped: %s (%v)", skipHint, err)
		return nil, false
	}
	args := []string{script}
	if !allowOpen {
		args = append(args, "--no-open")
	}
	for _, p := range paths {
		if as, ok := readAs[p]; ok {
			p = as
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		args = append(args, abs)
	}
	// Not t.Context(): that is already canceled when Dir runs in a Cleanup.
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = filepath.Dir(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var exitErr *exec.ExitError
	foundProblems := errors.As(runErr, &exitErr) && exitErr.ExitCode() == 1
	if runErr != nil && !foundProblems {
		r.errorf("running %s: %v\nstderr:\n%s", script, runErr, stderr.String())
		return nil, false
	}
	var rep warcioReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		r.errorf("reading verify.mjs output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		return nil, false
	}
	files := make(map[string]warcioFile, len(rep.Files))
	problems := 0
	for i, f := range rep.Files {
		if i >= len(paths) {
			break
		}
		// Key by the path as given, not the absolute one passed to node.
		files[paths[i]] = f
		for _, p := range f.Problems {
			r.errorf("%s: %s", paths[i], p)
			problems++
		}
	}
	if len(rep.Files) != len(paths) {
		r.errorf("verify.mjs reported on %d files, want %d", len(rep.Files), len(paths))
	}
	if runErr != nil && problems == 0 {
		r.errorf("verify.mjs exited 1 without reporting a problem\nstderr:\n%s", stderr.String())
	}
	return files, true
}
