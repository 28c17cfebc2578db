//go:build unix && !linux

package config

import "syscall"

// writable reports whether the process may create entries in dir
// (access(2) with W_OK and X_OK: permissions, and a read-only mount).
func writable(dir string) error {
	const wOK, xOK = 0x2, 0x1
	return syscall.Access(dir, wOK|xOK)
}
