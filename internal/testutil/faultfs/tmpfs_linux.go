package faultfs

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a new directory under t.TempDir()
// and unmounts it when the test ends, after the cleanups registered later
// (a proxy started afterwards is stopped first). Where that is not possible
// (not root, no CAP_SYS_ADMIN in a container, no tmpfs) it skips the test,
// saying why.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	if uid := os.Geteuid(); uid != 0 {
		t.Skipf("needs root and tmpfs: running as uid %d, cannot mount a tmpfs", uid)
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("faultfs: %v", err)
	}
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		t.Skipf("needs root and tmpfs: mount -t tmpfs -o %s tmpfs %s: %v", opts, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("faultfs: unmounting %s: %v (detaching it)", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}
