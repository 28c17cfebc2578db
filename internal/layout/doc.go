// Package layout holds no code: its test checks the import rules that
// keep each step of a capture in its own room (docs/architecture.md).
package layout
