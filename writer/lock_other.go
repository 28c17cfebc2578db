//go:build !unix

package writer

// lockFile is a no-op where flock is not available.
func lockFile(File) error { return nil }
