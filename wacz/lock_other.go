//go:build !unix

package wacz

import "os"

// lockedByWriter: the writer's lock is a flock, which only Unix has.
func lockedByWriter(*os.File) bool { return false }
