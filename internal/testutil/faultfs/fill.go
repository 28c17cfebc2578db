package faultfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// maxFill bounds Fill, so that a test pointed at a real disk by mistake
// fails instead of filling it.
const maxFill = 1 << 30

// Fill writes the file dir/name until the filesystem holding dir is full
// (a write fails with ENOSPC) and returns its path; removing it frees the
// space again. Blocks already allocated to other files may still take a
// few bytes, so Fill is only exact for writes that need a new block.
func Fill(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("faultfs: %v", err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	var total int64
	for {
		n, err := f.Write(chunk)
		total += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("faultfs: filling %s: %v", dir, err)
		}
		if total > maxFill {
			t.Fatalf("faultfs: %s not full after %d bytes: is it a small tmpfs?", dir, total)
		}
	}
	t.Logf("faultfs: %s full after %d bytes of %s", dir, total, name)
	return path
}
