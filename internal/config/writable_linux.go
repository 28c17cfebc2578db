package config

import "syscall"

// writable reports whether the process may create entries in dir:
// faccessat2(2) with W_OK and X_OK as the process itself (AT_EACCESS, its
// effective user and capabilities, as its writes will be; plain access(2)
// asks for its real user without capabilities, and refused a service run
// as a user with CAP_DAC_OVERRIDE) and a read-only mount.
func writable(dir string) error {
	const wOK, xOK, atFDCWD, atEAccess = 0x2, 0x1, -0x64, 0x200
	return syscall.Faccessat(atFDCWD, dir, wOK|xOK, atEAccess)
}
