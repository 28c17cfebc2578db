//go:build !linux

package faultfs

import (
	"runtime"
	"testing"
)

// Tmpfs skips the test: mounting a tmpfs needs Linux.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	t.Skipf("needs root and tmpfs: mounting a tmpfs is only done on linux, not %s", runtime.GOOS)
	return ""
}
