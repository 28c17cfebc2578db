package crawllog

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Rotate gives each of the logger's files a closed name, leaves other
// hosts' and ports' files alone, and Rotated finds what it named.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	l, err := New(dir, "host.example", 8000, nil, nil)
	require.NoError(t, err)
	require.NoError(t, l.Log(Entry{Prefix: "jobA", Status: 200, URL: "http://example.com/"}))
	require.NoError(t, l.Log(Entry{Prefix: "jobB", Status: 200, URL: "http://example.com/"}))
	other := filepath.Join(dir, "jobA-otherhost-8000.log")
	require.NoError(t, os.WriteFile(other, []byte("x\n"), 0o644))
	_, err = l.Rotate(time.Now())
	require.Error(t, err, "before Close")
	require.NoError(t, l.Close())

	at := time.Date(2026, 12, 4, 10, 0, 0, 123e6, time.UTC)
	got, err := l.Rotate(at)
	require.NoError(t, err)
	want := []string{filepath.Join(dir, "jobA-host-8000-20261204100000123.log"), filepath.Join(dir, "jobB-host-8000-20261204100000123.log")}
	require.Equal(t, want, got)
	line, err := os.ReadFile(want[0])
	require.NoError(t, err)
	require.Contains(t, string(line), "http://example.com/")
	_, err = os.Stat(other)
	require.NoError(t, err, "another host's file is not this logger's")

	found, err := Rotated(dir)
	require.NoError(t, err)
	require.Equal(t, want, found)
}
