// Package zstdcli runs Debian's zstd command for tests: the reference
// implementation, independent of the klauspost/compress code warcproxy
// writes and reads zstd with. Without the command a test is skipped,
// except under CI=true, where that is a failure (.ci/run installs it).
package zstdcli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Path returns the zstd command, or skips (fails under CI) t without it.
func Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("zstd")
	if err != nil {
		if v := strings.ToLower(os.Getenv("CI")); v == "true" || v == "1" {
			t.Fatalf("zstd not found with CI=true (.ci/run installs the zstd package): %v", err)
		}
		t.Skipf("zstd not found (apt-get install zstd): %v", err)
	}
	return p
}

// Run runs zstd with args and stdin, and returns its stdout; a failure
// fails t with zstd's stderr. Give -q to quiet its progress lines.
func Run(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	out, err := Try(t, stdin, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// Try is Run that returns zstd's failure (with its stderr) instead.
func Try(t testing.TB, stdin []byte, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(Path(t), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("zstd %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// Frame compresses p into one zstd frame with the CLI's defaults (level 3,
// content checksum) and its content size (--stream-size: the CLI writes it
// when it knows the size). dict, if not nil, is the dictionary to use;
// more args (--no-check, --no-content-size, ...) come before the input.
func Frame(t testing.TB, p, dict []byte, args ...string) []byte {
	t.Helper()
	args = append([]string{"-q", "-c", fmt.Sprintf("--stream-size=%d", len(p))}, args...)
	if dict != nil {
		args = append(args, "-D", writeTemp(t, t.TempDir(), "dict", dict))
	}
	return Run(t, p, args...)
}

// Train trains a dictionary of at most maxSize bytes on samples with
// `zstd --train`, as an operator would for --zstd-dictionary.
func Train(t testing.TB, samples [][]byte, maxSize int) []byte {
	t.Helper()
	dir := t.TempDir()
	args := []string{"-q", "--train", "-o", filepath.Join(dir, "dict"), fmt.Sprintf("--maxdict=%d", maxSize)}
	for i, s := range samples {
		args = append(args, writeTemp(t, dir, fmt.Sprintf("s%d", i), s))
	}
	Run(t, nil, args...)
	d, err := os.ReadFile(filepath.Join(dir, "dict"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Decompress decompresses the file at path as `zstd -d` does (skippable
// frames skipped, frames concatenated, every checksum checked), with the
// dictionary dict if not nil.
func Decompress(t testing.TB, path string, dict []byte) []byte {
	t.Helper()
	args := []string{"-q", "-d", "-c"}
	if dict != nil {
		args = append(args, "-D", writeTemp(t, t.TempDir(), "dict", dict))
	}
	return Run(t, nil, append(args, path)...)
}

func writeTemp(t testing.TB, dir, name string, p []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, p, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// List is what `zstd -lv` says of the .zst file at path.
type List struct {
	Frames, Skippable int
	DictID            uint32
	// HasSize and HasCheck: every frame carries its content size, its
	// checksum.
	HasSize, HasCheck bool
}

// ListFile runs `zstd -lv` on path.
func ListFile(t testing.TB, path string) List {
	t.Helper()
	out := string(Run(t, nil, "-lv", path))
	num := func(re string) int {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatalf("zstd -lv %s: %v", path, err)
		}
		return n
	}
	return List{
		Frames:    num(`# Zstandard Frames: (\d+)`),
		Skippable: num(`# Skippable Frames: (\d+)`),
		DictID:    uint32(num(`DictID: (\d+)`)),
		HasSize:   strings.Contains(out, "Decompressed Size:"),
		HasCheck:  strings.Contains(out, "Check: XXH64"),
	}
}
