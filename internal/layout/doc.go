// Package layout holds no code: its tests check the import rules that
// keep each step of a capture in its own room (docs/architecture.md), and
// that what a newcomer reads first names the Go that builds it and the
// Debian packages the checks use.
package layout
