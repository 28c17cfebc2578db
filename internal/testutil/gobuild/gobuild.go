// Package gobuild builds a command of this module into a temporary
// directory, for tests that run the real binary (as a user or a script
// would) from their TestMain.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binary builds pkg (e.g. "github.com/warcproxy/warcproxy/cmd/warcproxy")
// and returns the binary's path and a function that removes it.
func Binary(pkg string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "warcproxy-build-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return bin, cleanup, nil
}

// RunWith builds pkg, stores the binary's path in *bin, runs the tests and
// removes the binary: the whole body of a TestMain whose tests run it.
func RunWith(m *testing.M, pkg string, bin *string) int {
	path, cleanup, err := Binary(pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	*bin = path
	return m.Run()
}
